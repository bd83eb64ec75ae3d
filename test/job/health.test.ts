/** Health checks and the "no usable node" verdict as the job decides them (src/job/health.ts, events.ts). */
import * as d from '../../src/job/decide';
import { reduce, type JobEvent } from '../../src/job/events';
import { HEALTH_RECHECK_MS, rechecks, unusableReason, unusableVerdict } from '../../src/job/health';
import type { JobState } from '../../src/job/state';
import { toStatus } from '../../src/job/status';
import { derive } from '../../src/ledger/derive';
import { printStatus } from '../../src/cli/commands';
import { ids, node, state } from './fixtures';

const apply = (s: JobState, ...events: JobEvent[]) => events.reduce(reduce, s);
const sick = (nodeId: string, reason = 'disk full', now = 1000): JobEvent => ({ type: 'healthFailed', failed: [{ nodeId, reason, exitCode: 1 }], now });
const pass = (nodeId: string, now = 20_000): JobEvent => ({ type: 'healthChecked', nodeId, result: { ok: true }, now });

describe('a node failing its health check', () => {
  it('is kept out of the next round: a member moves to waiting, and the rest form the round', () => {
    const s = apply(state({ round: 2, members: [node('a'), node('b')], waiting: [node('c')] }), sick('a'));
    expect(ids(s.members)).toEqual(['b']);
    expect(ids(s.waiting)).toEqual(['a', 'c']);
    const plan = d.planRound(s);
    expect(ids(plan.participants)).toEqual(['b', 'c']);
    expect(ids(plan.parked)).toEqual(['a']);
    expect(d.available(s)).toBe(2);
  });

  it('costs the job no restart and is no pending failure (a membership change)', () => {
    const s = apply(state({ round: 2, members: [node('a'), node('b')] }), sick('a'));
    expect(s.restarts).toBe(0);
    expect(s.pendingFailure).toBeNull();
  });

  it('shows as unhealthy with its reason in the status object, and is no spare', () => {
    const s = apply(state({ round: 1, members: [node('b')], waiting: [node('a')] }, { maxNodes: 1 }), sick('a', 'nvidia-smi failed: no devices'));
    const st = toStatus(s);
    expect(st.nodes.find((n) => n.nodeId === 'a')?.state).toBe('unhealthy');
    expect(st.unhealthy).toEqual([{ nodeId: 'a', reason: 'nvidia-smi failed: no devices' }]);
    expect(st.spares).toEqual([]);
    expect(printStatus(st)).toContain('unhealthy: a: health check failed: nvidia-smi failed: no devices');
  });

  it('is not a newcomer that interrupts a running round', () => {
    const s = apply(state({ round: 1, phase: 'running', members: [node('b')], waiting: [node('a')] }), sick('a'));
    expect(d.interruptReason(s, ['b'])).toBeNull();
    // Once a recheck passes it is admitted like any newcomer.
    expect(d.interruptReason(apply(s, pass('a')), ['b'])).toBe('admitting a');
  });

  it('is rechecked every HEALTH_RECHECK_MS while it is in the job; a pass lets it back, a failure keeps it out with the new reason', () => {
    let s = apply(state({ round: 3, members: [node('b')], waiting: [node('a')] }), sick('a', 'disk full', 1000));
    expect(rechecks(s)).toEqual([{ nodeId: 'a', dueAt: 1000 + HEALTH_RECHECK_MS }]);
    s = apply(s, { type: 'healthChecked', nodeId: 'a', result: { ok: false, reason: 'low memory', exitCode: 1 }, now: 11_000 });
    expect(rechecks(s)).toEqual([{ nodeId: 'a', dueAt: 11_000 + HEALTH_RECHECK_MS }]);
    expect(s.unhealthy?.[0]).toMatchObject({ reason: 'low memory', round: 3 });
    expect(d.available(s)).toBe(1);
    s = apply(s, pass('a'));
    expect(s.unhealthy).toEqual([]);
    expect(d.available(s)).toBe(2);
    expect(rechecks(s)).toEqual([]);
  });

  it('that leaves the job is forgotten (no recheck of a node that is gone)', () => {
    const s = apply(state({ round: 1, members: [node('b')], waiting: [node('a')] }), sick('a'), { type: 'drain', req: { nodeId: 'a' }, now: 2000 });
    expect(s.unhealthy).toEqual([]);
    expect(rechecks(s)).toEqual([]);
  });

  it('that is not in the job is ignored', () => {
    const s0 = state({ round: 1, members: [node('b')] });
    expect(apply(s0, sick('zz'))).toBe(s0);
  });

  it('counts toward quarantine: one ledger failure per episode, not per recheck', () => {
    let s = apply(state({ round: 2, members: [node('b')], waiting: [node('a')], ledger: { cursor: null, outbox: [] } }), sick('a'));
    const first = derive(null, s, '2026-12-02T00:00:00.000Z');
    const failures = (r: typeof first) => r.records.filter((x) => x.kind === 'failure');
    expect(failures(first)).toEqual([expect.objectContaining({ nodeId: 'a', round: 2, rank: null, exitCode: 1, message: 'health check failed: disk full' })]);
    s = apply(s, { type: 'healthChecked', nodeId: 'a', result: { ok: false, reason: 'still full', exitCode: 1 }, now: 12_000 });
    const again = derive(first.cursor, s, '2026-12-02T00:00:10.000Z');
    expect(failures(again)).toEqual([]);
    // Passes, then fails in a later round's prepare: a second episode, a second failure.
    s = apply(s, pass('a'), { type: 'roundOpened' }, sick('a', 'disk full', 30_000));
    expect(failures(derive(again.cursor, s, '2026-12-02T00:00:20.000Z'))).toEqual([expect.objectContaining({ nodeId: 'a', round: 3 })]);
  });
});

describe('no usable node', () => {
  const q = (nodeId: string) => ({ type: 'quarantine', quarantined: [{ nodeId, reason: '3 failures in 1h (1 job); last: exit code 1' }] }) as JobEvent;

  it('a one-node job whose node is quarantined has no usable node, and says which and why', () => {
    const s = apply(state({ members: [node('n1')] }), q('n1'));
    expect(unusableReason(s)).toBe('no usable node: n1 quarantined (3 failures in 1h (1 job); last: exit code 1)');
  });

  it('names both causes, quarantine and a failing check', () => {
    const s = apply(state({ waiting: [node('n1'), node('n2')] }, { minNodes: 2 }), q('n1'), sick('n2'));
    expect(unusableReason(s)).toBe('no usable node: n1 quarantined (3 failures in 1h (1 job); last: exit code 1), n2 failing its health check: "disk full"');
  });

  it('too few usable nodes when some are usable but not min of them', () => {
    const s = apply(state({ waiting: [node('n1'), node('n2')] }, { minNodes: 2 }), sick('n2'));
    expect(unusableReason(s)).toBe('too few usable nodes (1 of min 2): n2 failing its health check: "disk full"');
  });

  it('is not the verdict while enough usable nodes remain, nor while too few joined at all (join_timeout waits for more)', () => {
    expect(unusableReason(apply(state({ waiting: [node('n1'), node('n2')] }), sick('n2')))).toBeNull();
    expect(unusableReason(apply(state({ waiting: [node('n1')] }, { minNodes: 2 }), sick('n1')))).toBeNull();
    expect(unusableReason(state({ waiting: [node('n1')] }))).toBeNull();
  });

  it('fails the job once it has lasted unusable_timeout (never later than join_timeout), and not before', () => {
    const s0 = apply(state({ members: [node('n1')] }, { rdzv: { unusableTimeoutMs: 5000 } }), sick('n1'));
    const s = apply(s0, { type: 'waiting', now: 10_000 });
    expect(s.unusableSince).toBe(10_000);
    // Waiting again later keeps the start of the episode.
    expect(apply(s, { type: 'waiting', now: 12_000 }).unusableSince).toBe(10_000);
    expect(unusableVerdict(s, 14_999)).toBeNull();
    expect(unusableVerdict(s, 15_000)).toBe('no usable node: n1 failing its health check: "disk full" for 5s (unusable_timeout)');
    const short = apply(state({ members: [node('n1')] }, { rdzv: { unusableTimeoutMs: 60_000, joinTimeoutMs: 2000 } }), sick('n1'), { type: 'waiting', now: 0 });
    expect(unusableVerdict(short, 2000)).toContain('for 2s');
  });

  it('a node that becomes usable ends the episode: the clock starts again next time', () => {
    const s = apply(state({ members: [node('n1')] }, { rdzv: { unusableTimeoutMs: 5000 } }), sick('n1'), { type: 'waiting', now: 10_000 }, pass('n1'), { type: 'waiting', now: 11_000 });
    expect(s.unusableSince).toBeNull();
    expect(unusableVerdict(s, 99_000)).toBeNull();
    const again = apply(s, sick('n1', 'disk full', 20_000), { type: 'waiting', now: 20_000 });
    expect(again.unusableSince).toBe(20_000);
    expect(apply(again, { type: 'gathered' }).unusableSince).toBeNull();
  });

  it('telastic status says so on its first line, with the time left', () => {
    const s = apply(state({ members: [node('n1')] }, { rdzv: { unusableTimeoutMs: 60_000 } }), sick('n1'), { type: 'waiting', now: Date.parse('2026-12-02T10:00:00.000Z') });
    const st = toStatus(s);
    expect(st.unusable).toEqual({ reason: 'no usable node: n1 failing its health check: "disk full"', since: '2026-12-02T10:00:00.000Z', timeoutMs: 60_000 });
    const first = printStatus(st, Date.parse('2026-12-02T10:00:20.000Z')).split('\n')[0];
    expect(first).toBe('job job1: no usable node: n1 failing its health check: "disk full" (the job fails in 40s unless one becomes usable)');
    expect(toStatus(state({ members: [node('n1')] })).unusable).toBeUndefined();
  });

  it('join_timeout names the nodes kept out', () => {
    const s = apply(state({ waiting: [node('n1')] }, { minNodes: 2 }), sick('n1'));
    expect(d.joinTimeoutReason(s)).toContain('(n1 failing its health check)');
  });
});
