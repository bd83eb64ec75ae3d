/** checkQuarantine against a real PostgreSQL 15: counting across jobs, recording, release. */
import { migrate } from '../../src/ledger/migrate';
import { checkQuarantine } from '../../src/ledger/quarantine';
import { writeRecords, type LedgerRecord } from '../../src/ledger/store';
import { postgresPerFile } from '../setup/postgres';

const postgres = postgresPerFile({ max: 4, migrate });

const now = Date.UTC(2026, 0, 1, 12);
const iso = (ms: number) => new Date(ms).toISOString();
/** A job whose node `nodeId` failed at each of `times`. */
function failingJob(jobId: string, nodeId: string, times: number[]): LedgerRecord[] {
  return [
    { kind: 'job', jobId, seq: 1, spec: {}, state: 'running', at: iso(times[0] - 1000) },
    ...times.map((t, i): LedgerRecord => ({ kind: 'failure', jobId, seq: i + 2, round: i + 1, nodeId, rank: 0, exitCode: 1, signal: null, message: `boom ${i + 1}`, at: iso(t) })),
  ];
}
const policy = { failures: 3, windowMs: 3_600_000 };

test('failures across jobs quarantine a node once; the others are not; a release lets it back until it fails again', async () => {
  await writeRecords(postgres.pool, failingJob('q-1', 'bad', [now - 50_000, now - 40_000]));
  await writeRecords(postgres.pool, failingJob('q-2', 'bad', [now - 30_000]));
  await writeRecords(postgres.pool, failingJob('q-3', 'flaky', [now - 7_200_000, now - 20_000, now - 10_000]));
  const first = await checkQuarantine(postgres.pool, ['bad', 'flaky', 'fine'], policy, now);
  expect(first).toEqual([{ nodeId: 'bad', reason: '3 failures in 1h00m (2 jobs); last: boom 1' }]);
  // Asked again (another job, later): the same row, the first reason.
  expect(await checkQuarantine(postgres.pool, ['bad'], policy, now + 1000)).toEqual(first);
  expect((await postgres.pool.query('SELECT count(*)::int AS n FROM quarantine')).rows[0].n).toBe(1);

  await postgres.pool.query('UPDATE quarantine SET released_at = $2 WHERE node_id = $1', ['bad', new Date(now + 2000)]);
  expect(await checkQuarantine(postgres.pool, ['bad'], policy, now + 3000)).toEqual([]);
  await writeRecords(postgres.pool, failingJob('q-4', 'bad', [now + 4000, now + 5000, now + 6000]));
  expect(await checkQuarantine(postgres.pool, ['bad'], policy, now + 7000)).toEqual([{ nodeId: 'bad', reason: '3 failures in 1h00m (1 job); last: boom 3' }]);
});
