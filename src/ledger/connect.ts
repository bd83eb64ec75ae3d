/**
 * Which database is the ledger, for the commands. One driver (`pg`), two databases: PostgreSQL at
 * DATABASE_URL, else the embedded PGlite in a directory (embedded.ts; `TELASTIC_LEDGER_DIR`, by
 * default `.telastic/ledger`).
 *
 * - `hostLedger` is for the long-lived processes that write it (controller, dev): they host the
 *   embedded one for as long as they run.
 * - `connectLedger` is for readers (`telastic history`, `report`, `nodes`): they connect to the
 *   process hosting it, or, when none does, host it themselves for the length of the command.
 *
 * `where` says which database answered, for messages: 'DATABASE_URL' or the directory.
 * `close()` ends the connection, and what was hosted for it.
 */
import { existsSync } from 'node:fs';
import pg from 'pg';
import { isLedgerDirLocked, readHolder } from './dir-lock';
import { hostEmbeddedLedger } from './embedded';
import { LedgerLockedError, NoLedgerError } from './errors';
import { migrate } from './migrate';
import { openLedger } from './open';
import { quarantinePolicy, type QuarantinePolicy } from './quarantine';

export { LedgerLockedError, NoLedgerError } from './errors';

export interface LedgerConnection {
  pool: pg.Pool;
  where: string;
  close(): Promise<void>;
}

/** How long a reader waits for a host that holds the lock but does not serve yet (PGlite's first open runs initdb). */
const STARTING_MS = 60_000;
const POLL_MS = 100;

export const defaultLedgerDir = (env: NodeJS.ProcessEnv) => env.TELASTIC_LEDGER_DIR ?? '.telastic/ledger';

/** The ledger for a writer that runs for long: PostgreSQL at DATABASE_URL, else the embedded one at `dir`, hosted here. */
export async function hostLedger(env: NodeJS.ProcessEnv = process.env, dir = defaultLedgerDir(env)): Promise<LedgerConnection> {
  if (env.DATABASE_URL) {
    const pool = await openLedger(env.DATABASE_URL);
    return { pool, where: 'DATABASE_URL', close: () => pool.end() };
  }
  const hosted = await hostEmbeddedLedger(dir);
  return { pool: hosted.pool, where: dir, close: hosted.close };
}

/** How long a controller waits for the directory's lock (a reader may hold it for a moment) before it runs without a ledger. */
const HOST_PATIENCE_MS = 15_000;

/**
 * The ledger a controller or `telastic dev` hosts, with the quarantine policy: PostgreSQL at
 * DATABASE_URL, else the embedded one at `dir`. None with TELASTIC_LEDGER=off, or when another
 * process keeps the directory (said in one line through `warn`: that controller runs without it).
 * A bad policy variable throws before anything opens.
 */
export async function ledgerToHost(
  env: NodeJS.ProcessEnv,
  dir: string,
  warn: (line: string) => void,
): Promise<(LedgerConnection & { policy: QuarantinePolicy }) | undefined> {
  const policy = quarantinePolicy(env);
  if (env.TELASTIC_LEDGER === 'off') return undefined;
  const deadline = Date.now() + HOST_PATIENCE_MS;
  for (;;) {
    try {
      return { ...(await hostLedger(env, dir)), policy };
    } catch (err) {
      if (!(err instanceof LedgerLockedError)) throw err;
      if (Date.now() > deadline) {
        warn(`${err.message}; this process runs without a ledger`);
        return undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * The ledger for a reader: PostgreSQL at DATABASE_URL; else the embedded one at `dir`, through the
 * process that hosts it, or hosted here when none does. NoLedgerError when `dir` does not exist.
 */
export async function connectLedger(env: NodeJS.ProcessEnv = process.env, dir = defaultLedgerDir(env)): Promise<LedgerConnection> {
  if (env.DATABASE_URL) return connect(env.DATABASE_URL, 'DATABASE_URL');
  if (!existsSync(dir)) throw new NoLedgerError(dir);
  // Taking the lock decides atomically between hosting it here and connecting to its host. A host
  // that stops meanwhile leaves the lock free (or its socket closed), and the next turn tries again.
  for (let turn = 1; ; turn++) {
    try {
      const hosted = await hostEmbeddedLedger(dir);
      return { pool: hosted.pool, where: dir, close: hosted.close };
    } catch (err) {
      if (!(err instanceof LedgerLockedError)) throw err;
      const url = await hostUrl(dir);
      if (url === null && turn === 3) throw err;
      if (url !== null) {
        try {
          return await connect(url, dir);
        } catch (connectErr) {
          if (turn === 3) throw connectErr;
        }
      }
    }
  }
}

/** The URL the lock's holder serves on, once it serves; null when the lock is no longer held meanwhile. */
async function hostUrl(dir: string): Promise<string | null> {
  const deadline = Date.now() + STARTING_MS;
  for (;;) {
    const url = readHolder(dir)?.url;
    if (url) return url;
    if (!(await isLedgerDirLocked(dir))) return null;
    if (Date.now() > deadline) throw new Error(`ledger at ${dir}: its host (pid ${readHolder(dir)?.pid ?? 'unknown'}) has not served it within ${STARTING_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function connect(url: string, where: string): Promise<LedgerConnection> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return { pool, where, close: () => pool.end() };
}
