/**
 * The embedded ledger's directory lock, and who holds it. PGlite does not lock its data directory,
 * and two processes on one directory silently lose writes, so the process that hosts it holds a
 * proper-lockfile lock: DIR/lock, a directory made with an atomic mkdir, whose mtime the holder
 * refreshes every UPDATE_MS. A lock not refreshed for STALE_MS (its holder crashed or was
 * SIGKILLed) is stale, and the next process to ask takes it over. A holder that finds its lock
 * refreshed or removed by another process learns it through `onCompromised`.
 *
 * The holder writes DIR/server.json, `{ pid }` at once and `{ pid, url }` once it serves, for
 * readers and for the message of a second host. Known limit (proper-lockfile issue #121): two
 * processes that take over one stale lock at the same instant can both succeed; the one whose lock
 * was replaced learns it at its next refresh.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import lockfile from 'proper-lockfile';
import { LedgerLockedError } from './errors';

export const STALE_MS = 10_000;
const UPDATE_MS = 2_000;
const POLL_MS = 200;

export interface Holder {
  pid: number;
  /** The postgres:// URL it serves the ledger on; absent while it is still opening. */
  url?: string;
}

/**
 * Takes the lock on `dir` (which must exist); resolves with its release. Throws LedgerLockedError
 * at once when a live process holds it; a holder that is gone or not yet known is waited for
 * until its lock goes stale, or its address file names a live process.
 */
export async function lockLedgerDir(dir: string, onCompromised: (err: Error) => void): Promise<() => Promise<void>> {
  const options = { lockfilePath: path.join(dir, 'lock'), realpath: false, stale: STALE_MS, update: UPDATE_MS, onCompromised };
  const deadline = Date.now() + STALE_MS + 2 * UPDATE_MS;
  for (;;) {
    try {
      return await lockfile.lock(dir, options);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ELOCKED') throw err;
    }
    const pid = readHolder(dir)?.pid ?? null;
    if ((pid !== null && isAlive(pid)) || Date.now() > deadline) throw new LedgerLockedError(dir, pid);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** True while some process holds a lock on `dir` that is not stale. */
export function isLedgerDirLocked(dir: string): Promise<boolean> {
  return lockfile.check(dir, { lockfilePath: path.join(dir, 'lock'), realpath: false, stale: STALE_MS });
}

/** The holder `dir`'s address file names, or null when there is none (or it is unreadable). */
export function readHolder(dir: string): Holder | null {
  try {
    const holder = JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8')) as Holder;
    return Number.isInteger(holder.pid) ? holder : null;
  } catch {
    return null;
  }
}

/** Replaces the address file atomically (a reader never sees half of it). */
export function writeHolder(dir: string, holder: Holder): void {
  const file = path.join(dir, 'server.json');
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(holder)}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

export function removeHolder(dir: string): void {
  fs.rmSync(path.join(dir, 'server.json'), { force: true });
}

/** True while `pid` exists on this machine (also when it is another user's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}
