/**
 * The directory of `telastic dev`'s database (.telastic/ by default) holds every job's history,
 * plain without a key, `--env` secrets included: only its user may read it. What dev creates is
 * 0700 (the Temporal server then writes its files under umask 077, dev-server.ts); a directory
 * that was already there is used only when this user owns it and nobody else may write to it
 * (as ssh treats ~/.ssh), and a database left readable by others (older telastic made it 0644)
 * is made 0600.
 */
import { chmodSync, lstatSync, mkdirSync, statSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from './errors';

/** SQLite's files beside the database. */
const SIDE_FILES = ['', '-journal', '-wal', '-shm'];

export function prepareDbDir(dbFile: string): void {
  const dir = path.dirname(dbFile);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = statSync(dir);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new UsageError(`--db: ${dir} is owned by uid ${st.uid}, not by this user (uid ${uid}): choose another --db`, '--db', dbFile);
  if (st.mode & 0o022) {
    throw new UsageError(`--db: ${dir} is writable by others (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}): chmod go-w it, or choose another --db`, '--db', dbFile);
  }
  for (const file of SIDE_FILES.map((s) => dbFile + s)) {
    const f = lstatOrUndefined(file);
    if (f?.isFile() && f.uid === uid && f.mode & 0o077) chmodSync(file, 0o600);
  }
}

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}
