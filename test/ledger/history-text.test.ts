/** `telastic history` as text: the header, every record in seq order at its offset, failures in the words they have. */
import { describeFailure, formatDuration, formatOffset } from '../../src/ledger/format';
import { historyText } from '../../src/ledger/history-text';
import { T0, at, fourRounds, job, round } from './timelines';

const never = new Date(0);

test('the header, then every record in the order the job wrote it', () => {
  const text = historyText(fourRounds(), never);
  expect(text.split('\n')).toEqual([
    'job job-1 · succeeded',
    `started ${at(0)} · ended ${at(100)} (1m40s)`,
    'spec    train.py --epochs 3 · nnodes 1:3 · nproc-per-node 2 · max-restarts 3',
    '',
    '    +10.0s  node a joined',
    '    +10.0s  round 1 started · world size 4 · nodes (group rank): a (0), b (1)',
    '    +40.0s  round 1 ended after 30.0s: failure: Traceback (most recent call last): boom',
    '    +40.0s  round 1 failure: node b rank 3 exit 1: Traceback (most recent call last): boom',
    '    +50.0s  round 2 started · world size 3 · nodes (group rank): a (0), b (1)',
    '  +1m10.0s  round 2 ended after 20.0s: failure: node lost: missed its heartbeat for 10s',
    '  +1m10.0s  round 2 failure: node b lost: missed its heartbeat for 10s',
    '  +1m10.0s  node b lost',
    '  +1m11.0s  checkpoint /ckpt/step-200 (step 200), chosen for round 3',
    '  +1m12.0s  round 3 started · world size 4 · nodes (group rank): a (0), c (1)',
    '  +1m30.0s  round 3 ended after 18.0s: membership change',
    '  +1m30.0s  round 4 started · world size 6 · nodes (group rank): a (0), c (1), d (2)',
    '  +1m38.0s  round 4 ended after 8.0s: succeeded',
    '  +1m40.0s  job succeeded',
  ]);
});

test('a job still running ends with now; a multi-line message is indented; control characters are shown, not sent', () => {
  const t = job({
    rounds: [round(1, 3, 2, null, null, ['a'])],
    failures: [{ seq: 4, round: 1, nodeId: 'a', rank: 0, exitCode: null, signal: 'SIGSEGV', message: 'Traceback:\n  File "x.py"\n\x1b[31mSegfault', at: at(3) }],
  }, null, 'running');
  const lines = historyText(t, new Date(T0 + 7_500)).split('\n');
  expect(lines[1]).toBe(`started ${at(0)} · not ended (7.5s so far)`);
  expect(lines.slice(5)).toEqual([
    '     +3.0s  round 1 failure: node a rank 0 killed by SIGSEGV: Traceback:',
    '              File "x.py"',
    '            \\x1b[31mSegfault',
    '     +7.5s  now: the job has not ended',
  ]);
});

test('a round with many members shows the first 32 and how many more', () => {
  const ids = Array.from({ length: 40 }, (_, i) => `n${i}`);
  const text = historyText(job({ rounds: [round(1, 1, 1, 2, 'succeeded', ids)] }), never);
  expect(text).toContain('n31 (31), … 8 more');
  expect(text).not.toContain('n32');
});

describe('describeFailure says only what a failure has', () => {
  test.each([
    [{ rank: 3, exitCode: 1, signal: null, message: 'boom' }, 'node b rank 3 exit 1: boom'],
    [{ rank: 3, exitCode: 1, signal: null, message: null }, 'node b rank 3 exit 1'],
    [{ rank: 0, exitCode: null, signal: 'SIGKILL', message: null }, 'node b rank 0 killed by SIGKILL'],
    [{ rank: null, exitCode: null, signal: null, message: 'node lost: heartbeat timeout' }, 'node b lost: heartbeat timeout'],
    [{ rank: null, exitCode: null, signal: null, message: null }, 'node b lost'],
    [{ rank: null, exitCode: 127, signal: null, message: 'python3: not found' }, 'node b exit 127: python3: not found'],
    [{ rank: 1, exitCode: null, signal: 'SIGKILL', message: 'watchdog timer "step" expired after 2 s' }, 'node b rank 1: watchdog timer "step" expired after 2 s'],
  ])('%j', (f, text) => {
    expect(describeFailure({ nodeId: 'b', ...f })).toBe(text);
    expect(describeFailure({ nodeId: 'b', ...f })).not.toMatch(/ - |null|undefined/);
  });
});

test.each([
  [850, '850ms'], [12_345, '12.3s'], [245_000, '4m05s'], [7_380_000, '2h03m'], [273_600_000, '3d04h'],
])('formatDuration(%d) = %s', (ms, text) => expect(formatDuration(ms)).toBe(text));

test.each([
  [0, '+0.0s'], [12_345, '+12.3s'], [245_260, '+4m05.2s'], [7_385_000, '+2h03m05s'], [-1500, '-1.5s'],
])('formatOffset(%d) = %s', (ms, text) => expect(formatOffset(ms)).toBe(text));

test('a job not ended shows what its rounds say, not the state it was recorded with at its start', () => {
  const t = job({ rounds: [round(1, 3, 2, null, null, ['a'])] }, null, 'waiting');
  expect(historyText(t, new Date(T0 + 5000)).split('\n')[0]).toBe('job job-1 · not ended · round 1 running');
  expect(historyText(job({}, null, 'waiting'), new Date(T0 + 5000)).split('\n')[0]).toBe('job job-1 · not ended');
});

test('a quarantine says why; a release says so', () => {
  const t = job({
    nodeEvents: [
      { seq: 1, nodeId: 'b', event: 'quarantine', cause: '3 failures in 1h00m (2 jobs); last: boom', at: at(1) },
      { seq: 2, nodeId: 'b', event: 'release', cause: null, at: at(2) },
    ],
  });
  expect(historyText(t, new Date(0)).split('\n').slice(4, 6)).toEqual([
    '     +1.0s  node b quarantined: 3 failures in 1h00m (2 jobs); last: boom',
    '     +2.0s  node b released from quarantine',
  ]);
});

test('a job that ended with a verdict says it on its last line', () => {
  const t = fourRounds();
  const verdict = 'no progress in 3 restarts (every round resumed from ckpt_00000100.pt)';
  const text = historyText({ ...t, job: { ...t.job!, state: 'failed', endReason: verdict } }, never);
  expect(text.split('\n').pop()).toBe(`  +1m40.0s  job failed: ${verdict}`);
});
