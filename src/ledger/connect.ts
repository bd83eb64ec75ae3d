/**
 * The ledger for a reader (`telastic history`, `report`, `nodes`): PostgreSQL at DATABASE_URL.
 * `where` says which database answered, for messages. `close()` ends the connection.
 */
import pg from 'pg';
import { migrate } from './migrate';

export interface LedgerConnection {
  pool: pg.Pool;
  where: string;
  close(): Promise<void>;
}

export class NoLedgerError extends Error {
  override name = 'NoLedgerError';
}

export async function connectLedger(env: NodeJS.ProcessEnv = process.env): Promise<LedgerConnection> {
  const url = env.DATABASE_URL;
  if (!url) throw new NoLedgerError('no ledger: set DATABASE_URL');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return { pool, where: 'DATABASE_URL', close: () => pool.end() };
}
