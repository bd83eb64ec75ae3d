/** The pure mapping from sampled status objects to metric values (src/metrics/jobs.ts). */
import { poolValues, restartCause, stepJob, type JobSample, type JobTrack } from '../../src/metrics/jobs';
import type { PoolNode } from '../../src/pool/state';

const job = (state: JobSample['state'], restarts = 0, lastFailure: JobSample['lastFailure'] = null): JobSample => ({ jobId: 'j', state, round: 1, restarts, worldSize: 4, lastFailure });
const lost = { nodeId: 'b', rank: null, exitCode: null, signal: null, message: 'no heartbeat' };
const GAP = 3000;

/** Steps through samples taken at the given times (ms); returns every step. */
function run(samples: Array<[number, JobSample]>) {
  let track: JobTrack | undefined;
  return samples.map(([at, s]) => {
    const step = stepJob(track, s, at, GAP);
    track = step.track;
    return step;
  });
}

test('the first sample counts nothing: earlier restarts and time are not this process\'s to count', () => {
  const [first] = run([[0, job('running', 3, lost)]]);
  expect(first).toMatchObject({ restarts: null, recoverySeconds: null, runningSeconds: 0, observedSeconds: 0, goodput: 0 });
});

test('a lost node: one restart under node_lost, and the time until running again, from the midpoints of the samples that saw it', () => {
  const steps = run([
    [0, job('running')],
    [1000, job('running')],
    [2000, job('restarting', 1, lost)], // stopped between 1000 and 2000: 1500
    [3000, job('rendezvous', 1, lost)],
    [4000, job('rendezvous', 1, lost)],
    [5000, job('running', 1, lost)], // back between 4000 and 5000: 4500
  ]);
  expect(steps.map((s) => s.restarts)).toEqual([null, null, { cause: 'node_lost', count: 1 }, null, null, null]);
  expect(steps.map((s) => s.recoverySeconds)).toEqual([null, null, null, null, null, 3]);
});

test('restarts counted after the workers stopped (blame settles at the next prepare) still make a recovery', () => {
  const steps = run([[0, job('running')], [1000, job('restarting', 0)], [2000, job('rendezvous', 1, lost)], [3000, job('running', 1, lost)]]);
  expect(steps[2].restarts).toEqual({ cause: 'node_lost', count: 1 });
  expect(steps[3].recoverySeconds).toBe(2);
});

test('a membership change (a joiner, a drain, a scale) stops the workers but is no failure: no recovery observed', () => {
  const steps = run([[0, job('running')], [1000, job('rendezvous')], [2000, job('running')]]);
  expect(steps.map((s) => s.recoverySeconds)).toEqual([null, null, null]);
  expect(steps.every((s) => s.restarts === null)).toBe(true);
});

test('a failure and its recovery both between two running samples: one recovery, shorter than the gap', () => {
  const steps = run([[0, job('running')], [1000, job('running')], [3000, job('running', 1, lost)], [4000, job('running', 1, lost)]]);
  expect(steps.map((s) => s.recoverySeconds)).toEqual([null, null, 1, null]);
  expect(steps[2].restarts).toEqual({ cause: 'node_lost', count: 1 });
  // Half of that gap is booked as downtime, not as training: goodput drops below 1.
  expect(steps.map((s) => s.runningSeconds)).toEqual([0, 1, 1, 1]);
  expect(steps.map((s) => s.goodput)).toEqual([0, 1, 2 / 3, 3 / 4]);
});

test('two restarts between samples count two, under the latest root cause', () => {
  const crash = { nodeId: 'a', rank: 3, exitCode: 1, signal: null, message: null };
  const steps = run([[0, job('running')], [1000, job('running', 2, crash)]]);
  expect(steps[1].restarts).toEqual({ cause: 'worker_exit', count: 2 });
});

test('causes: a vanished node, a signal, an exit code, nothing known', () => {
  expect(restartCause(lost)).toBe('node_lost');
  expect(restartCause({ nodeId: 'a', rank: 0, exitCode: null, signal: 'SIGKILL', message: null })).toBe('worker_killed');
  expect(restartCause({ nodeId: 'a', rank: 0, exitCode: 2, signal: null, message: null })).toBe('worker_exit');
  expect(restartCause(null)).toBe('unknown');
});

test('goodput: the time since first seen that the job ran, by the state of the sample that began each interval', () => {
  const steps = run([[0, job('running')], [1000, job('running')], [2000, job('restarting', 1, lost)], [3000, job('rendezvous', 1, lost)], [4000, job('running', 1, lost)]]);
  // running 0–2000, not 2000–4000
  expect(steps.map((s) => s.goodput)).toEqual([0, 1, 1, 2 / 3, 0.5]);
  expect(steps.map((s) => s.runningSeconds)).toEqual([0, 1, 1, 0, 0]);
  expect(steps.map((s) => s.observedSeconds)).toEqual([0, 1, 1, 1, 1]);
});

test('a stalled sampler books at most the gap limit, neither as training nor as downtime beyond it', () => {
  const steps = run([[0, job('running')], [60_000, job('running')]]);
  expect(steps[1].runningSeconds).toBe(GAP / 1000);
  expect(steps[1].observedSeconds).toBe(GAP / 1000);
});

const node = (nodeId: string, state: PoolNode['state'], jobId: string | null = null): PoolNode => ({ nodeId, address: 'h', slots: 1, labels: {}, incarnation: 'i', state, jobId, since: 0, heartbeatTimeoutMs: 1000 });
const pjob = (jobId: string, minNodes: number) => ({ jobId, minNodes, maxNodes: 4, slots: 1, since: 0, excluded: [] });

test('pool: nodes by state (every state present), and jobs holding fewer than their minimum', () => {
  const v = poolValues({
    nodes: [node('a', 'granted', 'x'), node('b', 'draining', 'x'), node('c', 'free'), node('d', 'lost', 'y'), node('e', 'granted', 'y')],
    jobs: [pjob('x', 2), pjob('y', 2), pjob('z', 1)],
  });
  expect(v.nodes).toEqual({ free: 1, granted: 2, draining: 1, lost: 1 });
  // x holds 2 (a draining node is still held); y holds 1 of 2 (its lost node is not); z none.
  expect(v.jobsWaiting).toBe(2);
});
