/**
 * Directories only this user may use: the agent's state dir (whose `agent-*.json` files name the
 * process groups a starting agent SIGKILLs) and the embedded ledger's (its socket and the
 * `server.json` readers follow). Created 0700; an existing one is checked as ssh checks `~/.ssh`:
 * - owned by another user: refused (that user decides what is in it);
 * - writable by group or others: refused, not repaired (someone may already have put files in
 *   it, and a chmod would not take them out); the message says what to do;
 * - ours, readable by others only (what earlier telastic versions created, 0755): chmod'ed to
 *   0700, since nobody else could have written into it.
 */
import * as fs from 'node:fs';

/** The one line an unsafe directory is refused with. */
export class UnsafeDirError extends Error {
  override readonly name = 'UnsafeDirError';
}

/** Creates `dir` (and missing parents) 0700, or checks an existing one; `what` names it (`state dir`). */
export function ensurePrivateDir(dir: string, what: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new UnsafeDirError(`${what} ${dir}: not a directory`);
    throw err;
  }
  const st = fs.statSync(dir); // a symlink is judged by the directory it leads to, which is what is used
  if (!st.isDirectory()) throw new UnsafeDirError(`${what} ${dir}: not a directory`);
  const uid = process.getuid?.();
  if (uid === undefined) return; // no owners to check (Windows)
  if (st.uid !== uid) throw new UnsafeDirError(`${what} ${dir}: owned by uid ${st.uid}, not by this user (uid ${uid}); use a directory of your own`);
  const mode = st.mode & 0o777;
  if (mode & 0o022) {
    throw new UnsafeDirError(`${what} ${dir}: writable by group or others (mode ${mode.toString(8).padStart(4, '0')}): others may have put files in it; use a new directory, or empty it and chmod 700 it`);
  }
  if (mode & 0o077) fs.chmodSync(dir, 0o700);
}
