/** `telastic status`'s text: what a person reads, so each line says only what the job has. */
import { printStatus } from '../../src/cli/commands';
import type { JobStatus } from '../../src/job/status';

function status(over: Partial<JobStatus> = {}): JobStatus {
  return {
    jobId: 'demo-1', state: 'running', round: 3, restarts: 1, maxRestarts: 3, minNodes: 1, maxNodes: 2, worldSize: 2,
    nodes: [
      { nodeId: 'node-a', address: '127.0.0.1', groupRank: 0, state: 'running' },
      { nodeId: 'node-b', address: null, groupRank: null, state: 'lost' },
    ],
    spares: [], lastFailure: null, checkpoint: null,
    ...over,
  };
}

const failure = (f: Partial<NonNullable<JobStatus['lastFailure']>>) => ({ nodeId: 'node-b', rank: null, exitCode: null, signal: null, message: null, ...f });
const failureLine = (s: JobStatus) => printStatus(s).split('\n').find((l) => l.startsWith('last failure'));

test('a summary line, then one line per node with its group rank (or -), state and address', () => {
  expect(printStatus(status()).split('\n')).toEqual([
    'job demo-1: running · round 3 · world size 2 · restarts 1/3 · nodes 1:2',
    '  node-a                     0  running    127.0.0.1',
    '  node-b                     -  lost       ',
  ]);
});

test('a lost node: its id and why, no empty rank, exit or signal', () => {
  expect(failureLine(status({ lastFailure: failure({ message: 'node lost: did not answer within 5s' }) }))).toBe(
    'last failure: node node-b: node lost: did not answer within 5s',
  );
});

test('a worker that exited: its rank, exit code and the error-file message', () => {
  expect(failureLine(status({ lastFailure: failure({ rank: 3, exitCode: 1, message: 'ZeroDivisionError: division by zero' }) }))).toBe(
    'last failure: rank 3 on node node-b: exit code 1: ZeroDivisionError: division by zero',
  );
});

test('a worker killed by a signal: the signal, not the exit code; no message, no trailing separator', () => {
  expect(failureLine(status({ lastFailure: failure({ rank: 0, exitCode: -9, signal: 'SIGKILL' }) }))).toBe(
    'last failure: rank 0 on node node-b: killed by SIGKILL',
  );
  expect(failureLine(status({ lastFailure: failure({ rank: 1, exitCode: 0 }) }))).toBe('last failure: rank 1 on node node-b: exit code 0');
});

test("a worker its watchdog timer killed: the timer is the cause, the agent's signal is not named apart", () => {
  expect(failureLine(status({ lastFailure: failure({ rank: 2, signal: 'SIGKILL', message: 'watchdog timer "step" expired after 60 s' }) }))).toBe(
    'last failure: rank 2 on node node-b: watchdog timer "step" expired after 60 s',
  );
  // A worker's own message that merely mentions a watchdog keeps its signal.
  expect(failureLine(status({ lastFailure: failure({ rank: 2, signal: 'SIGABRT', message: 'NCCL watchdog timer fired' }) }))).toBe(
    'last failure: rank 2 on node node-b: killed by SIGABRT: NCCL watchdog timer fired',
  );
});

test('no failure, checkpoint or quarantine: no line for them', () => {
  expect(printStatus(status())).not.toMatch(/last failure|checkpoint|quarantined/);
});

test('the checkpoint (step ? when unknown) and each quarantined node with how to release it', () => {
  const text = printStatus(status({
    checkpoint: { path: '/ck/ckpt_00000100.pt', step: 100, time: '2026-11-30T06:39:44.726Z' },
    quarantined: [{ nodeId: 'node-c', reason: '2 failures within 1h' }],
  }));
  expect(text.split('\n').slice(3)).toEqual([
    'checkpoint: /ck/ckpt_00000100.pt (step 100, 2026-11-30T06:39:44.726Z)',
    'quarantined: node-c: 2 failures within 1h (telastic nodes --release node-c)',
  ]);
  expect(printStatus(status({ checkpoint: { path: '/ck/d', step: null, time: 't' } }))).toContain('checkpoint: /ck/d (step ?, t)');
});

test('checkpoint-first drains: the one waiting, then how each ended', () => {
  const text = printStatus(status({
    preempting: [{ nodeId: 'c', requestedAt: '2026-12-01T12:00:09.000Z', graceMs: 25_000 }],
    preemptions: [
      { nodeId: 'a', requestedAt: '2026-12-01T12:00:01.000Z', graceMs: 60_000, round: 1, checkpoint: { path: '/ck/ckpt_00000123.pt', step: 123 }, tookMs: 2300 },
      { nodeId: 'b', requestedAt: '2026-12-01T12:00:05.000Z', graceMs: 25_000, round: 2, checkpoint: null, tookMs: 25_000 },
    ],
  })).split('\n');
  expect(text.slice(-3)).toEqual([
    'drain of c: checkpoint-first requested 12:00:09, waiting for a checkpoint (grace 25s)',
    'drain of a: checkpoint-first requested 12:00:01, checkpoint ckpt_00000123.pt (step 123) after 2.3 s',
    'drain of b: checkpoint-first requested 12:00:05, no checkpoint within the 25s grace',
  ]);
});
