import * as d from '../../src/job/decide';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
import { derive, type LedgerCursor } from '../../src/ledger/derive';

const spec = jobSpecSchema.parse({ jobId: 'j', minNodes: 1, maxNodes: 2, nprocPerNode: 2, entrypoint: { script: 't.py', args: [] } });
const node = (nodeId: string) => ({ nodeId, address: `${nodeId}.local`, slots: 2, joinedAt: 0 });
const running = (s: JobState, round: number, ...ids: string[]): JobState => ({ ...s, phase: 'running', round, members: ids.map(node), waiting: [] });

function step(c: LedgerCursor | null, s: JobState) {
  const r = derive(c, s, '2026-01-01T00:00:00.000Z');
  return { c: r.cursor, kinds: r.records.map((x) => (x.kind === 'nodeEvent' ? `${x.event}:${x.nodeId}` : x.kind)), records: r.records };
}

test('a job\'s life as records, numbered from 1, each change once', () => {
  let s = initialState(spec, 0);
  let r = step(null, s);
  expect(r.kinds).toEqual(['job']);
  s = running(s, 1, 'a', 'b');
  r = step(r.c, s);
  expect(r.kinds).toEqual(['join:a', 'join:b', 'roundStarted']);
  expect(step(r.c, s).kinds).toEqual([]); // nothing changed, nothing recorded
  // Worker failure on b, then b is lost: the round ends, b departs; the failure waits for blame.
  s = d.applyDeparture({ ...s, phase: 'restarting', pendingFailure: { nodeId: 'b', rank: 3, exitCode: 1, signal: null, message: 'boom', round: 1 } }, 'b', 'lost');
  r = step(r.c, s);
  expect(r.kinds).toEqual(['roundEnded', 'lost:b']);
  expect(r.records[0]).toMatchObject({ round: 1, reason: 'failure: boom' });
  s = d.settleFailure(s).state; // blame settled: now it is recorded, once
  s = { ...running(s, 2, 'a'), checkpoint: { path: '/c/1', step: 10, time: 't' } };
  r = step(r.c, s);
  expect(r.kinds).toEqual(['failure', 'checkpoint', 'roundStarted']);
  expect(r.records[0]).toMatchObject({ round: 1, nodeId: 'b', rank: 3 });
  expect(r.records[1]).toMatchObject({ chosenForRound: 2 });
  s = { ...s, phase: 'succeeded' };
  r = step(r.c, s);
  expect(r.kinds).toEqual(['roundEnded', 'jobEnded']);
  expect(r.records.map((x) => x.seq)).toEqual([10, 11]);
  expect(step(r.c, s).kinds).toEqual([]);
});

test('a second failure ends its round as a failure, though the first is still the last settled one', () => {
  const boom = (round: number) => ({ nodeId: 'b', rank: 1, exitCode: 3, signal: null, message: `boom ${round}`, round });
  let s = running(initialState(spec, 0), 1, 'a', 'b');
  let r = step(null, s);
  s = { ...s, phase: 'restarting', pendingFailure: boom(1) };
  r = step(r.c, s);
  s = running(d.settleFailure(s).state, 2, 'a', 'b');
  r = step(r.c, s);
  expect(s.lastFailure).toEqual(boom(1));
  s = { ...s, phase: 'restarting', pendingFailure: boom(2) };
  r = step(r.c, s);
  expect(r.kinds).toEqual(['roundEnded']);
  expect(r.records[0]).toMatchObject({ round: 2, reason: 'failure: boom 2' });
  r = step(r.c, d.settleFailure(s).state);
  expect(r.records).toEqual([expect.objectContaining({ kind: 'failure', round: 2, message: 'boom 2' })]);
});

test('when a node dies the blamed node is recorded, not the survivor whose worker failed first', () => {
  let s = running(initialState(spec, 0), 1, 'a', 'b');
  let r = step(null, s);
  const symptom = { nodeId: 'a', rank: 0, exitCode: 1, signal: null, message: 'gloo: connection reset by peer', round: 1 };
  s = { ...s, phase: 'restarting', pendingFailure: symptom };
  r = step(r.c, s);
  s = d.applyDeparture(s, 'b', 'lost');
  s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, 'b', 'did not answer')) };
  r = step(r.c, s);
  r = step(r.c, running(d.settleFailure(s).state, 2, 'a'));
  expect(r.records.filter((x) => x.kind === 'failure')).toEqual([expect.objectContaining({ nodeId: 'b', rank: null })]);
});

test('a job that fails before settling blame records its pending failure', () => {
  let s = running(initialState(spec, 0), 1, 'a');
  let r = step(null, s);
  s = { ...s, phase: 'failed', pendingFailure: { nodeId: 'a', rank: 0, exitCode: 2, signal: null, message: 'bad', round: 1 } };
  r = step(r.c, s);
  expect(r.kinds).toEqual(['roundEnded', 'failure', 'jobEnded']);
});

test('a checkpoint-first drain is recorded with how its checkpoint went', async () => {
  const { requestCheckpointFirst, finishPreempt } = await import('../../src/job/preempt');
  let s = running(initialState(spec, 0), 1, 'a', 'b');
  let r = step(null, s);
  s = requestCheckpointFirst(s, 'b', 25_000, Date.parse('2026-01-01T00:00:01Z'));
  s = finishPreempt(s, s.preempts![0], { checkpoint: { path: '/c/ckpt_00000129.pt', step: 129, time: 't' }, now: Date.parse('2026-01-01T00:00:02.400Z') });
  s = d.settleMembership({ ...s, phase: 'restarting' });
  r = step(r.c, s);
  expect(r.records.find((x) => x.kind === 'nodeEvent')).toMatchObject({ event: 'drain', nodeId: 'b', cause: 'drain of b: checkpoint-first requested 00:00:01, checkpoint ckpt_00000129.pt (step 129) after 1.4 s' });
  // A later plain drain of the same node (another round) is a plain drain.
  s = d.settleMembership(d.applyDrain(running({ ...s, departed: [] }, 2, 'a', 'b'), 'b'));
  expect(step(r.c, s).records.find((x) => x.kind === 'nodeEvent' && x.nodeId === 'b')).toMatchObject({ event: 'drain', cause: 'drained' });
});
