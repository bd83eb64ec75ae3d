/**
 * Blame in the ledger is the job's settled blame, through every layer that reads it: records
 * derived from the job's states as the workflow goes (a survivor's worker fails first, the next
 * prepare finds node b gone), written to a real PostgreSQL, read back, shown by `history` and
 * counted by `report`.
 */
import * as d from '../../src/job/decide';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
import { derive, type LedgerCursor } from '../../src/ledger/derive';
import { isRecorded, jobFigures } from '../../src/ledger/figures';
import { historyText } from '../../src/ledger/history-text';
import { migrate } from '../../src/ledger/migrate';
import { jobTimeline, writeRecords, type LedgerRecord } from '../../src/ledger/store';
import { postgresPerFile } from '../setup/postgres';
import { at } from './records';

const postgres = postgresPerFile({ max: 2, migrate });

const spec = jobSpecSchema.parse({ jobId: 'blame', minNodes: 1, maxNodes: 2, nprocPerNode: 2, entrypoint: { script: 'train.py', args: [] } });
const node = (nodeId: string) => ({ nodeId, address: `${nodeId}.local`, slots: 2, joinedAt: 0 });

/** The job's states, one per second, as workflows/round.ts and job.ts make them. */
function killedNodeB(): JobState[] {
  const states: JobState[] = [];
  let s: JobState = initialState(spec, 0);
  states.push(s);
  s = { ...s, phase: 'running', round: 1, members: [node('a'), node('b')] };
  states.push(s);
  // b is killed; gloo resets the survivor's connection before b's heartbeat is missed.
  const symptom = { nodeId: 'a', rank: 3, exitCode: 1, signal: null, message: '[rank3]: RuntimeError: Connection reset by peer', round: 1 };
  s = { ...s, phase: 'restarting', pendingFailure: d.mergeCause(s.pendingFailure, symptom) };
  states.push(s);
  s = d.applyDeparture({ ...s, phase: 'rendezvous', round: 2 }, 'b', 'lost'); // round 2's prepare: b does not answer
  s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, 'b', 'did not answer within 10s')) };
  states.push(s);
  s = d.settleFailure({ ...s, round: 3 }).state;
  states.push(s);
  s = { ...s, phase: 'running' };
  states.push(s);
  states.push({ ...s, phase: 'succeeded' });
  return states;
}

test('history and report name the lost node, not the survivor whose worker failed first', async () => {
  let cursor: LedgerCursor | null = null;
  const records: LedgerRecord[] = [];
  killedNodeB().forEach((s, i) => {
    const r = derive(cursor, s, at(i * 10));
    cursor = r.cursor;
    records.push(...r.records);
  });
  // In batches as the outbox flushes them: the amend arrives after its round's end was written.
  const cut = records.findIndex((r) => r.kind === 'roundCause');
  expect(cut).toBeGreaterThan(0);
  await writeRecords(postgres.pool, records.slice(0, cut));
  expect((await jobTimeline(postgres.pool, 'blame')).rounds[0]).toMatchObject({ round: 1, endReason: 'failure: [rank3]: RuntimeError: Connection reset by peer' });
  expect(await writeRecords(postgres.pool, records.slice(cut))).toBe(records.length - cut);
  expect(await writeRecords(postgres.pool, records)).toBe(0); // a retried batch changes nothing

  const t = await jobTimeline(postgres.pool, 'blame');
  if (!isRecorded(t)) throw new Error('job not recorded');
  const round1 = t.rounds[0]!;
  // The end keeps its time and place; only its reason is the settled one.
  expect(round1).toMatchObject({ endReason: 'failure: node b lost: did not answer within 10s', endedAt: at(20), endedSeq: records.find((r) => r.kind === 'roundEnded')!.seq });
  const history = historyText(t, new Date(at(60)));
  expect(history).toContain('round 1 ended after 10.0s: failure: node b lost: did not answer within 10s');
  expect(history).not.toMatch(/rank3|Connection reset/);
  expect(history).toContain('failure: node b lost: did not answer within 10s');
  const f = jobFigures(t, new Date(at(60)));
  expect(f.restartsByCause).toEqual({ 'node-lost': 1 });
  expect(f).toMatchObject({ failureRestarts: 1, recoveries: 1 });
});

test('a cause for a round whose end is not recorded changes nothing', async () => {
  const base = { jobId: 'blame-2', at: at(0) };
  await writeRecords(postgres.pool, [
    { ...base, kind: 'job', seq: 1, spec: {}, state: 'waiting' },
    { ...base, kind: 'roundStarted', seq: 2, round: 1, members: [{ nodeId: 'a', groupRank: 0, address: 'a' }], worldSize: 2 },
  ]);
  expect(await writeRecords(postgres.pool, [{ ...base, kind: 'roundCause', seq: 3, round: 1, reason: 'failure: node b lost' }])).toBe(0);
  expect((await jobTimeline(postgres.pool, 'blame-2')).rounds[0]).toMatchObject({ endedAt: null, endReason: null });
});
