/** The no-progress verdict (src/job/progress.ts), through the reducer as the workflow applies it. */
import { reduce, type JobEvent } from '../../src/job/events';
import { noProgressVerdict, nextStall } from '../../src/job/progress';
import type { JobState } from '../../src/job/state';
import { state } from './fixtures';

const CK = (n: number) => `/ck/job1/ckpt_${String(n).padStart(8, '0')}.pt`;
const found = (path: string | null): JobEvent => ({
  type: 'checkpointFound',
  checkpoint: path ? { path, step: null, time: '2026-12-02T00:00:00.000Z' } : null,
  ...(path ? { resumeFrom: path } : {}),
});
const failed = (s: JobState): JobState => ({ ...s, restarts: s.restarts + 1 }); // what failureSettled does

/** Rounds as the workflow runs them: each resumes from `from[i]`, each but the first after a failure. */
function rounds(s: JobState, from: (string | null)[]): JobState {
  return from.reduce((next, path, i) => reduce(i === 0 ? next : failed(next), found(path)), s);
}

test('K failure restarts in a row from the same checkpoint end the job, naming it', () => {
  const s0 = state({}, { checkpointDir: '/ck', maxRestarts: 10, maxRestartsWithoutProgress: 3 });
  expect(noProgressVerdict(rounds(s0, [CK(100), CK(100), CK(100)]))).toBeNull(); // 2 restarts so far
  expect(noProgressVerdict(rounds(s0, [CK(100), CK(100), CK(100), CK(100)]))).toBe('no progress in 3 restarts (every round resumed from ckpt_00000100.pt)');
});

test('a newer checkpoint between failures starts the count again', () => {
  const s0 = state({}, { checkpointDir: '/ck', maxRestarts: 10, maxRestartsWithoutProgress: 2 });
  const s = rounds(s0, [CK(100), CK(100), CK(200), CK(200)]);
  expect(s.stall).toMatchObject({ from: CK(200), restarts: 1 });
  expect(noProgressVerdict(s)).toBeNull();
  expect(noProgressVerdict(reduce(failed(s), found(CK(200))))).toMatch(/^no progress in 2 restarts/);
});

test('a restart for a membership change neither counts nor resets', () => {
  const s0 = state({}, { checkpointDir: '/ck', maxRestarts: 10, maxRestartsWithoutProgress: 2 });
  let s = rounds(s0, [CK(100), CK(100)]); // one failure restart
  s = reduce(s, found(CK(100))); // a join: a new round, restarts unchanged
  expect(s.stall).toMatchObject({ restarts: 1 });
  s = reduce(failed(s), found(CK(100)));
  expect(noProgressVerdict(s)).toBe('no progress in 2 restarts (every round resumed from ckpt_00000100.pt)');
});

test('a job that never wrote a checkpoint crash-loops from scratch: that is no progress too', () => {
  const s0 = state({}, { checkpointDir: '/ck', maxRestarts: 10, maxRestartsWithoutProgress: 2 });
  expect(noProgressVerdict(rounds(s0, [null, null, null]))).toBe('no progress in 2 restarts (every round started from scratch: no checkpoint in /ck)');
  // The first checkpoint is progress.
  expect(noProgressVerdict(rounds(s0, [null, null, CK(1)]))).toBeNull();
});

test('without a checkpoint directory, or with K = 0, there is no verdict', () => {
  expect(noProgressVerdict(rounds(state({}, { maxRestarts: 10, maxRestartsWithoutProgress: 1 }), [null, null, null]))).toBeNull();
  expect(noProgressVerdict(rounds(state({}, { checkpointDir: '/ck', maxRestarts: 10, maxRestartsWithoutProgress: 0 }), [CK(1), CK(1), CK(1)]))).toBeNull();
});

test('the default is documented: 3', () => {
  expect(state().spec.maxRestartsWithoutProgress).toBe(3);
  // A state carried from a run before the field existed has no stall record yet.
  expect(nextStall({ restarts: 4, stall: undefined as unknown as null }, CK(1))).toEqual({ from: CK(1), restarts: 0, atRestarts: 4 });
});

test('the verdict is kept in the status when the job ends with it', () => {
  const s = reduce(state(), { type: 'ended', phase: 'failed', verdict: 'no progress in 3 restarts (every round resumed from x)' });
  expect(s.verdict).toBe('no progress in 3 restarts (every round resumed from x)');
  expect(reduce(state(), { type: 'ended', phase: 'failed' }).verdict).toBeUndefined();
});
