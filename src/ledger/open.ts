/**
 * Open the ledger's database: a pg Pool on DATABASE_URL, migrated. An outage is not fatal: the
 * pool reports it and reconnects on the next write (the job's outbox retries).
 */
import pg from 'pg';
import { log } from '../log';
import type { HostedLedger } from '../controller';
import { migrate } from './migrate';
import { quarantinePolicy } from './quarantine';

export async function openLedger(url: string): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', (err) => log.warn({ err: err.message }, 'ledger: database connection lost'));
  const { applied } = await migrate(pool);
  if (applied.length) log.info({ applied }, 'ledger: migrations applied');
  return pool;
}

/** The ledger a controller hosts, from its environment: DATABASE_URL, or none. */
export async function ledgerFromEnv(env: NodeJS.ProcessEnv): Promise<HostedLedger | undefined> {
  const policy = quarantinePolicy(env);
  if (!env.DATABASE_URL) return undefined;
  const pool = await openLedger(env.DATABASE_URL);
  return { pool, close: () => pool.end(), policy };
}
