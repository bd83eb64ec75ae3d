/**
 * The embedded ledger: PGlite (PostgreSQL compiled to WebAssembly) with its files under one
 * directory, by default `.telastic/ledger`, for when there is no DATABASE_URL. One process hosts
 * it, the one holding the directory's lock (dir-lock.ts); it serves the database over the
 * PostgreSQL wire protocol on a unix socket in the directory (wire.ts), so that it, and readers in
 * other processes, use the `pg` driver as with any PostgreSQL.
 *
 * The directory holds `pgdata/` (PGlite's files), `lock/`, `server.json` (`{ pid, url }` of the
 * host) and the socket `.s.PGSQL.5432`.
 */
import * as path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { log } from '../log';
import { ensurePrivateDir } from '../private-dir';
import { lockLedgerDir, removeHolder, writeHolder } from './dir-lock';
import { migrate } from './migrate';
import { serveWire, SOCKET_NAME, type WireServer } from './wire';

export interface HostedLedger {
  /** Connected to the served database, migrated. */
  pool: pg.Pool;
  /** The URL other processes connect to while this one hosts it (also in server.json). */
  url: string;
  /** Ends the pool, stops serving, closes PGlite, removes server.json and releases the lock. */
  close(): Promise<void>;
}

/**
 * Creates `dir` if needed (0700; src/private-dir.ts refuses an unsafe one), locks it
 * (LedgerLockedError when another process holds it), opens PGlite on it, serves it and returns a
 * migrated pool on it.
 */
export async function hostEmbeddedLedger(dir: string): Promise<HostedLedger> {
  const abs = path.resolve(dir);
  // Its socket and server.json are the database: this user's only (a directory that existed
  // kept its mode before; an unsafe one is refused, UnsafeDirError).
  ensurePrivateDir(abs, 'ledger dir');
  // Once another process has taken the directory over, nothing here may touch its files again.
  let lost = false;
  let server: WireServer | undefined;
  const release = await lockLedgerDir(abs, (err) => {
    lost = true;
    log.error({ dir: abs, err: err.message }, 'ledger: lost the lock on its directory (another process took it over, or removed it); no longer serving it');
    void server?.close();
  });
  // Undone in reverse order, by close() or when a step here fails.
  const undo: Array<() => unknown> = [() => lost || release()];
  const unwind = async () => {
    const errors: unknown[] = [];
    for (const step of [...undo].reverse()) await Promise.resolve().then(step).catch((err: unknown) => errors.push(err));
    if (errors.length) throw errors[0];
  };
  try {
    writeHolder(abs, { pid: process.pid });
    undo.push(() => lost || removeHolder(abs));
    const db = await PGlite.create(path.join(abs, 'pgdata'));
    undo.push(() => lost || db.close());
    server = await serveWire(db, path.join(abs, SOCKET_NAME));
    undo.push(server.close);
    const url = `postgresql://postgres@/postgres?host=${encodeURIComponent(abs)}`;
    writeHolder(abs, { pid: process.pid, url });
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    pool.on('error', (err) => log.warn({ err: err.message }, 'ledger: connection to the embedded database lost'));
    undo.push(() => pool.end());
    await migrate(pool);
    let closing: Promise<void> | undefined;
    return { pool, url, close: () => (closing ??= unwind()) };
  } catch (err) {
    await unwind().catch(() => undefined);
    throw err;
  }
}
