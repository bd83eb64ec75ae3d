import * as d from '../../src/job/decide';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
import { derive, type LedgerCursor } from '../../src/ledger/derive';
import { classifyEnd } from '../../src/ledger/figures';

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

/** As the job goes (workflows/round.ts): the survivor's worker fails first, the next prepare finds b gone. */
function survivorFailsFirst() {
  const symptom = { nodeId: 'a', rank: 3, exitCode: 1, signal: null, message: '[rank3]: RuntimeError: Connection reset by peer', round: 1 };
  const states: JobState[] = [];
  let s = running(initialState(spec, 0), 1, 'a', 'b');
  states.push(s);
  s = { ...s, phase: 'restarting', pendingFailure: d.mergeCause(s.pendingFailure, symptom) };
  states.push(s);
  s = { ...s, phase: 'rendezvous', round: 2 }; // prepare of round 2: b does not answer
  s = d.applyDeparture(s, 'b', 'lost');
  s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, 'b', 'did not answer within 10s')) };
  states.push(s);
  s = d.settleFailure({ ...s, round: 3 }).state; // round 3 prepared: blame settles on b
  states.push(s, running(s, 3, 'a'));
  return { symptom, states };
}

test('a round a lost node ended is recorded as ended by its loss once blame settles, not by its victim', () => {
  const { states } = survivorFailsFirst();
  let c: LedgerCursor | null = null;
  const records = [];
  for (const s of states) {
    const r = step(c, s);
    c = r.c;
    records.push(...r.records);
  }
  // The round's end is recorded when it ends, with what ended it; blame settles later.
  expect(records.find((x) => x.kind === 'roundEnded')).toMatchObject({ round: 1, reason: 'failure: [rank3]: RuntimeError: Connection reset by peer' });
  const cause = records.find((x) => x.kind === 'roundCause');
  expect(cause).toMatchObject({ round: 1, reason: 'failure: node b lost: did not answer within 10s' });
  expect(classifyEnd(cause?.kind === 'roundCause' ? cause.reason : null)).toBe('node-lost');
  expect(records.filter((x) => x.kind === 'failure')).toEqual([expect.objectContaining({ nodeId: 'b', rank: null })]);
  // Appended after the records it follows, numbered like them, and only once.
  expect(records.map((x) => x.seq)).toEqual(records.map((_, i) => i + 1));
  expect(records.indexOf(cause!)).toBeGreaterThan(records.findIndex((x) => x.kind === 'roundEnded'));
  expect(c?.unsettled).toBeUndefined();
  expect(step(c, { ...states.at(-1)!, phase: 'succeeded' }).kinds).toEqual(['roundEnded', 'jobEnded']);
});

test('blame noted in one step with the round\'s end (a cursor that missed the end) names the lost node at once', () => {
  const { states } = survivorFailsFirst();
  const opened = step(null, states[0]!).c;
  const r = step(opened, states.at(-1)!);
  expect(r.records.find((x) => x.kind === 'roundEnded')).toMatchObject({ round: 1, reason: 'failure: node b lost: did not answer within 10s' });
  expect(r.kinds).not.toContain('roundCause');
});

test('a job that ends before blame settles amends its round with the pending (merged) blame', () => {
  const { states } = survivorFailsFirst();
  let r = step(step(null, states[0]!).c, states[1]!);
  expect(r.c.unsettled).toEqual({ round: 1, failure: '1:a:3' });
  r = step(r.c, { ...states[2]!, phase: 'failed' });
  expect(r.kinds).toEqual(['roundCause', 'failure', 'lost:b', 'jobEnded']);
  expect(r.records[0]).toMatchObject({ round: 1, reason: 'failure: node b lost: did not answer within 10s' });
});

test('a node lost at the prepare after a membership change is named as the end of that round (it costs the restart)', () => {
  let s = running(initialState(spec, 0), 1, 'a', 'b');
  let r = step(null, s);
  s = { ...s, phase: 'rendezvous', round: 2, waiting: [node('c')] }; // admitting c
  r = step(r.c, s);
  expect(r.records[0]).toMatchObject({ kind: 'roundEnded', round: 1, reason: 'membership change' });
  s = d.applyDeparture(s, 'b', 'lost');
  s = { ...s, pendingFailure: d.nodeLost(s, 'b', 'did not answer within 10s') };
  const settled = d.settleFailure({ ...s, round: 3 });
  expect(settled.state.restarts).toBe(1);
  r = step(step(r.c, s).c, running(settled.state, 3, 'a', 'c'));
  expect(r.records[0]).toMatchObject({ kind: 'roundCause', round: 1, reason: 'failure: node b lost: did not answer within 10s' });
  // A membership change that costs nothing stays one.
  s = { ...running(settled.state, 3, 'a', 'c'), phase: 'rendezvous', round: 4 };
  r = step(r.c, s);
  expect(step(r.c, running(d.settleFailure(s).state, 4, 'a', 'c')).kinds).toEqual(['roundStarted']);
});

test('blame that settles on the failure that ended the round amends nothing', () => {
  const boom = { nodeId: 'b', rank: 1, exitCode: 3, signal: null, message: 'boom', round: 1 };
  let s = running(initialState(spec, 0), 1, 'a', 'b');
  let r = step(null, s);
  s = { ...s, phase: 'restarting', pendingFailure: boom };
  r = step(r.c, s);
  expect(r.c.unsettled).toBeDefined();
  r = step(r.c, running(d.settleFailure(s).state, 2, 'a', 'b'));
  expect(r.kinds).toEqual(['failure', 'roundStarted']);
  expect(r.c.unsettled).toBeUndefined();
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
