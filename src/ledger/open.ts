/**
 * Open the ledger's database: a pg Pool on DATABASE_URL, migrated. An outage is not fatal: the
 * pool reports it and reconnects on the next write (the job's outbox retries).
 */
import pg from 'pg';
import { log } from '../log';
import { migrate } from './migrate';

export async function openLedger(url: string): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', (err) => log.warn({ err: err.message }, 'ledger: database connection lost'));
  const { applied } = await migrate(pool);
  if (applied.length) log.info({ applied }, 'ledger: migrations applied');
  return pool;
}

