/**
 * Writes ledger records to PostgreSQL. A batch is one transaction, and every statement is keyed by
 * (job_id, seq), so writing the same batch again (an activity retried after a lost connection or
 * a crash after commit) changes nothing and counts nothing. Readers are in timeline.ts.
 */
import type pg from 'pg';
import { InvalidRecordError, MissingParentError } from './errors';
import { ledgerRecord, type LedgerRecord } from './records';

export { ledgerRecord, type LedgerRecord } from './records';
export { jobTimeline, type JobTimeline } from './timeline';

/** Validates every record, then writes the batch in one transaction; returns how many were new. */
export async function writeRecords(pool: pg.Pool, records: LedgerRecord[]): Promise<number> {
  const parsed = records.map(parseRecord);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let written = 0;
    for (const r of parsed) written += await writeOne(client, r);
    await client.query('COMMIT');
    return written;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

function parseRecord(record: unknown, index: number): LedgerRecord {
  const result = ledgerRecord.safeParse(record);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new InvalidRecordError(index, issue.path.join('.') || 'record', issue.message);
}

/** Writes one record; 1 when it changed the ledger, 0 when it was already there. */
async function writeOne(client: pg.PoolClient, r: LedgerRecord): Promise<number> {
  switch (r.kind) {
    case 'job':
      return count(client, `
        INSERT INTO jobs (job_id, seq, spec, state, started_at, pool) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (job_id) DO UPDATE SET seq = excluded.seq, spec = excluded.spec, state = excluded.state, pool = excluded.pool
        WHERE jobs.seq < excluded.seq`,
        [r.jobId, r.seq, r.spec, r.state, r.at, r.pool ?? null]);
    case 'jobEnded': {
      const n = await count(client, 'UPDATE jobs SET seq = $2, state = $3, ended_at = $4, end_reason = $5 WHERE job_id = $1 AND seq < $2',
        [r.jobId, r.seq, r.state, r.at, r.reason ?? null]);
      if (n === 0 && !(await exists(client, 'SELECT 1 FROM jobs WHERE job_id = $1', [r.jobId]))) {
        throw new MissingParentError(r.jobId, r.seq, null);
      }
      return n;
    }
    case 'roundStarted':
      return count(client, `
        INSERT INTO rounds (job_id, round, seq, members, world_size, started_at) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT DO NOTHING`,
        [r.jobId, r.round, r.seq, JSON.stringify(r.members), r.worldSize, r.at]);
    case 'roundEnded': {
      const n = await count(client, `
        UPDATE rounds SET ended_at = $4, end_reason = $5, ended_seq = $3
        WHERE job_id = $1 AND round = $2 AND ended_seq IS NULL`,
        [r.jobId, r.round, r.seq, r.at, r.reason]);
      if (n === 0 && !(await exists(client, 'SELECT 1 FROM rounds WHERE job_id = $1 AND round = $2', [r.jobId, r.round]))) {
        throw new MissingParentError(r.jobId, r.seq, r.round);
      }
      return n;
    }
    case 'roundCause':
      // Only a round whose end is recorded, by an earlier record; the same reason again is a no-op.
      return count(client, `
        UPDATE rounds SET end_reason = $4
        WHERE job_id = $1 AND round = $2 AND ended_seq < $3 AND end_reason IS DISTINCT FROM $4`,
        [r.jobId, r.round, r.seq, r.reason]);
    case 'nodeEvent':
      return count(client, `
        INSERT INTO node_events (job_id, seq, node_id, kind, cause, at) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT DO NOTHING`,
        [r.jobId, r.seq, r.nodeId, r.event, r.cause ?? null, r.at]);
    case 'failure':
      return count(client, `
        INSERT INTO failures (job_id, seq, round, node_id, rank, exit_code, signal, message, at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
        [r.jobId, r.seq, r.round, r.nodeId, r.rank, r.exitCode, r.signal, r.message, r.at]);
    case 'checkpoint':
      return count(client, `
        INSERT INTO checkpoints (job_id, seq, path, step, saved_at, chosen_for_round) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT DO NOTHING`,
        [r.jobId, r.seq, r.path, r.step, r.at, r.chosenForRound ?? null]);
  }
}

async function count(client: pg.PoolClient, sql: string, values: unknown[]): Promise<number> {
  return (await client.query(sql, values)).rowCount ?? 0;
}

async function exists(client: pg.PoolClient, sql: string, values: unknown[]): Promise<boolean> {
  return ((await client.query(sql, values)).rowCount ?? 0) > 0;
}
