/**
 * A directory entry of the checkpoint dir: a manifest directory, a torch.distributed.checkpoint
 * directory, a Hugging Face Trainer `checkpoint-N` directory, any of them under a temporary name
 * (a write in progress, or the leftover of one), or something that is not ours (ignored, never
 * pruned).
 */
import type { Stats } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { mapBounded } from './bounded';
import { inspectDcp, looksLikeDcp } from './dcp';
import { inspectTrainer, looksLikeTrainer } from './hf';
import { isTransient } from './errors';
import { inspectManifest, MANIFEST } from './manifest';
import { isTempName, stepFromName } from './names';
import type { Verdict } from './types';

/** At most this many stats in flight per directory (a DCP directory has a file per rank). */
const STAT_CONCURRENCY = 8;

/** The direct entries' stats by name; entries that vanish meanwhile are left out. */
async function statEntries(dir: string, names: string[]): Promise<Map<string, Stats>> {
  const stats = new Map<string, Stats>();
  await mapBounded(names, STAT_CONCURRENCY, async (n) => {
    try {
      stats.set(n, await lstat(path.join(dir, n)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  });
  return stats;
}

/**
 * `stale(ms)` tells whether a temporary entry last written at `ms` is old enough to be a
 * leftover rather than a write in progress.
 */
export async function inspectDir(dir: string, name: string, st: Stats, stale: (mtimeMs: number) => boolean): Promise<Verdict> {
  const step = stepFromName(name);
  let stats: Map<string, Stats>;
  try {
    stats = await statEntries(dir, await readdir(dir));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'ignored' };
    if (isTransient(err)) throw err;
    return { state: 'skipped', entry: { path: dir, reason: `cannot read (${code ?? String(err)})`, step, time: st.mtime.toISOString() } };
  }
  // A directory is as new as its newest direct entry: files being written keep it young.
  let mtimeMs = st.mtimeMs;
  for (const s of stats.values()) mtimeMs = Math.max(mtimeMs, s.mtimeMs);
  const base = { path: dir, step, time: new Date(mtimeMs).toISOString() };
  const hasManifest = stats.get(MANIFEST)?.isFile() ?? false;
  const dcp = looksLikeDcp([...stats.keys()]);
  const trainer = looksLikeTrainer(name, [...stats.keys()]);
  // Only checkpoint-looking directories are ours: a `tmp/` or `.cache/` beside them is not.
  if (!hasManifest && !dcp && !trainer) return { state: 'ignored' };
  if (isTempName(name)) {
    return stale(mtimeMs) ? { state: 'skipped', entry: { ...base, reason: 'stale temporary directory' } } : { state: 'ignored' };
  }
  // A DCP directory may be named checkpoint-N without being Trainer's: its own marks decide first.
  if (hasManifest) return inspectManifest(dir, base);
  return dcp ? inspectDcp(stats, base) : inspectTrainer(dir, stats, base);
}
