/** The report's figures from hand-built timelines: numbers a wrong sum, gap or cause would change. */
import * as d from '../../src/job/decide';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
import { derive } from '../../src/ledger/derive';
import { classifyEnd, jobFigures } from '../../src/ledger/figures';
import { T0, at, fourRounds, job, round } from './timelines';

const never = new Date(0); // `now` must not matter for a job that ended

describe('jobFigures', () => {
  test('four rounds with gaps: goodput, restarts by cause, MTTR over failures only', () => {
    const f = jobFigures(fourRounds(), never);
    expect(f.wallMs).toBe(100_000);
    expect(f.productiveMs).toBe(30_000 + 20_000 + 18_000 + 8_000);
    expect(f.goodput).toBeCloseTo(0.76, 10);
    expect(f.restarts).toBe(3);
    expect(f.restartsByCause).toEqual({ 'worker-failure': 1, 'node-lost': 1, membership: 1 });
    expect(f.failureRestarts).toBe(2);
    expect(f.mttrMs).toBe((10_000 + 2_000) / 2); // round 3's end, a membership change, is no recovery
    expect(f.recoveries).toBe(2);
    expect(f.running).toBe(false);
  });

  test('world size is a step series: 0 in the gaps, a round ending as the next starts is one step', () => {
    expect(jobFigures(fourRounds(), never).worldSize).toEqual([
      { atMs: 0, worldSize: 0 },
      { atMs: 10_000, worldSize: 4 },
      { atMs: 40_000, worldSize: 0 },
      { atMs: 50_000, worldSize: 3 },
      { atMs: 70_000, worldSize: 0 },
      { atMs: 72_000, worldSize: 4 },
      { atMs: 90_000, worldSize: 6 },
      { atMs: 98_000, worldSize: 0 },
      { atMs: 100_000, worldSize: 0 },
    ]);
  });

  test('a job still running counts to now, its open round too', () => {
    const t = job({
      rounds: [round(1, 3, 10, 40, 'failure: boom', ['a', 'b']), round(2, 8, 45, null, null, ['a'])],
    }, null, 'running');
    const f = jobFigures(t, new Date(T0 + 60_000));
    expect(f).toMatchObject({ wallMs: 60_000, productiveMs: 30_000 + 15_000, restarts: 1, mttrMs: 5_000, running: true });
    expect(f.goodput).toBeCloseTo(0.75, 10);
    expect(f.worldSize.slice(-2)).toEqual([{ atMs: 45_000, worldSize: 2 }, { atMs: 60_000, worldSize: 2 }]);
  });

  test('a round the ledger never saw end counts until the job ended', () => {
    const f = jobFigures(job({ rounds: [round(1, 3, 20, null, null, ['a'])] }, 50, 'failed'), never);
    expect(f).toMatchObject({ wallMs: 50_000, productiveMs: 30_000, restarts: 0, mttrMs: null });
  });

  test('no rounds: all wall time, nothing productive; a zero-length job has no goodput', () => {
    expect(jobFigures(job({}, 100, 'failed'), never)).toMatchObject({
      wallMs: 100_000, productiveMs: 0, goodput: 0, restarts: 0, restartsByCause: {}, mttrMs: null, recoveries: 0,
      worldSize: [{ atMs: 0, worldSize: 0 }, { atMs: 100_000, worldSize: 0 }],
    });
    expect(jobFigures(job({}, 0, 'cancelled'), never)).toMatchObject({ wallMs: 0, goodput: null });
  });

  test('a failure that ends the job is no recovery', () => {
    const t = job({ rounds: [round(1, 3, 0, 30, 'failure: boom', ['a']), round(2, 6, 35, 60, 'failure: boom again', ['a'])] }, 61, 'failed');
    expect(jobFigures(t, never)).toMatchObject({ restarts: 1, restartsByCause: { 'worker-failure': 1 }, mttrMs: 5_000, recoveries: 1 });
  });

  test('a round starting at the job\'s start replaces the initial 0 step', () => {
    const f = jobFigures(job({ rounds: [round(1, 3, 0, 100, 'succeeded', ['a'])] }), never);
    expect(f.worldSize).toEqual([{ atMs: 0, worldSize: 2 }, { atMs: 100_000, worldSize: 2 }]);
    expect(f.goodput).toBe(1);
  });

  test('ignores `now` once the job ended; times before the start are clamped', () => {
    const t = job({ rounds: [{ ...round(1, 3, 0, 10, 'succeeded', ['a']), startedAt: at(-5) }] }, 10);
    expect(jobFigures(t, new Date(T0 + 999_000))).toMatchObject({ wallMs: 10_000, productiveMs: 10_000 });
  });
});

describe('classifyEnd', () => {
  test.each([
    [null, null],
    ['succeeded', 'succeeded'],
    ['failure: RuntimeError: CUDA out of memory', 'worker-failure'],
    ['failure: node b', 'worker-failure'],
    ['failure: node lost: its agent restarted and joined again', 'node-lost'],
    ['failure: node b lost: no heartbeat within 10s', 'node-lost'],
    ['failure: node host:1 lost: did not answer within 10s', 'node-lost'],
    ['failure: node b rank 3: lost the connection', 'worker-failure'],
    ['node lost', 'node-lost'],
    ['membership change', 'membership'],
    ['drain of b', 'membership'],
    ['scaled to maxNodes 2', 'membership'],
    ['cancelled', 'cancelled'],
    ['the moon', 'other'],
  ])('%j → %j', (reason, cause) => {
    expect(classifyEnd(reason)).toBe(cause);
  });

  // The reasons the job itself writes (derive.ts), so a change there cannot silently turn into "other".
  test('the reasons derive.ts writes', () => {
    const spec = jobSpecSchema.parse({ jobId: 'j', minNodes: 1, maxNodes: 2, nprocPerNode: 1, entrypoint: { script: 't.py', args: [] } });
    const node = (nodeId: string) => ({ nodeId, address: `${nodeId}.local`, slots: 1, joinedAt: 0 });
    const running: JobState = { ...initialState(spec, 0), phase: 'running', round: 1, members: [node('a'), node('b')] };
    const opened = derive(null, running, at(0)).cursor;
    const reason = (s: JobState) => {
      const r = derive(opened, s, at(1)).records.find((x) => x.kind === 'roundEnded');
      return r?.kind === 'roundEnded' ? r.reason : null;
    };
    const restarting = { ...running, phase: 'restarting' as const };
    expect(classifyEnd(reason({ ...restarting, pendingFailure: { nodeId: 'b', rank: 1, exitCode: 3, signal: null, message: 'boom', round: 1 } }))).toBe('worker-failure');
    expect(classifyEnd(reason({ ...restarting, pendingFailure: { nodeId: 'b', rank: 1, exitCode: null, signal: 'SIGKILL', message: null, round: 1 } }))).toBe('worker-failure');
    expect(classifyEnd(reason({ ...restarting, pendingFailure: d.nodeLost(running, 'b', 'heartbeat timeout') }))).toBe('node-lost');
    expect(classifyEnd(reason({ ...restarting, round: 2 }))).toBe('membership');
    expect(classifyEnd(reason({ ...restarting, phase: 'cancelled' }))).toBe('cancelled');
    expect(classifyEnd(reason({ ...running, phase: 'succeeded' }))).toBe('succeeded');
  });
});
