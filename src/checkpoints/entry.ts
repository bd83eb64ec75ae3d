/** One direct entry of the checkpoint dir → complete, skipped (with a reason), or ignored. */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { inspectDir } from './dir';
import { isTransient } from './errors';
import { inspectFile } from './file';
import { isCheckpointFileName, isCheckpointTempName, isHousekeepingName, isTempName, stepFromName } from './names';
import type { Verdict } from './types';

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}

/**
 * Symbolic links are ignored (a `latest.pt` link would otherwise be a second, step-less copy
 * of a checkpoint); so are sockets, pipes and NFS placeholders. Entries that vanish while we
 * look (renamed into place, pruned by another node) are ignored: the next scan sees them right.
 * Transient failures (EMFILE and the like) are thrown, for the scan to retry: taken as "cannot
 * read", a newer checkpoint would be passed over for an older one.
 */
export async function inspectEntry(root: string, name: string, stale: (mtimeMs: number) => boolean): Promise<Verdict> {
  if (isHousekeepingName(name)) return { state: 'ignored' };
  const full = path.join(root, name);
  try {
    const st = await lstat(full);
    if (st.isDirectory()) return await inspectDir(full, name, st, stale);
    if (!st.isFile()) return { state: 'ignored' };
    if (isTempName(name)) {
      if (!isCheckpointTempName(name) || !stale(st.mtimeMs)) return { state: 'ignored' };
      return { state: 'skipped', entry: { path: full, reason: 'stale temporary file', step: stepFromName(name), time: st.mtime.toISOString() } };
    }
    if (!isCheckpointFileName(name)) return { state: 'ignored' };
    return await inspectFile(full, name, st);
  } catch (err) {
    if (errno(err) === 'ENOENT') return { state: 'ignored' };
    if (isTransient(err)) throw err;
    // Dated now, so that pruning (which only removes what is older than the latest) leaves it.
    return { state: 'skipped', entry: { path: full, reason: `cannot read (${errno(err)})`, step: stepFromName(name), time: new Date().toISOString() } };
  }
}
