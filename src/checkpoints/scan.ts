/** Find the newest complete checkpoint in a directory, and what was skipped on the way. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { inspectEntry } from './entry';
import { CheckpointDirError } from './errors';
import type { CheckpointInfo, Scan, ScanOptions, SkippedCheckpoint } from './types';

export const DEFAULT_STALE_TEMP_MS = 10 * 60_000;

/**
 * Newest first: the higher step wins; entries without a step rank below every stepped one;
 * equal steps (and step-less entries among themselves) go by newest time, then by path.
 */
export function newestFirst<T extends Pick<CheckpointInfo, 'path' | 'step' | 'time'>>(a: T, b: T): number {
  const sa = a.step ?? -1;
  const sb = b.step ?? -1;
  if (sa !== sb) return sb - sa;
  const ta = Date.parse(a.time);
  const tb = Date.parse(b.time);
  if (ta !== tb) return tb - ta;
  return a.path < b.path ? 1 : a.path > b.path ? -1 : 0;
}

/**
 * Scan the direct entries of `dir`. A missing directory holds nothing (the job has not written
 * a checkpoint yet); one that cannot be listed throws CheckpointDirError.
 */
export async function findCheckpoints(dir: string, options: ScanOptions = {}): Promise<Scan> {
  const root = path.resolve(dir);
  const staleTempMs = options.staleTempMs ?? DEFAULT_STALE_TEMP_MS;
  const now = options.now ?? Date.now;
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { latest: null, complete: [], skipped: [] };
    throw new CheckpointDirError(root, code, err);
  }
  const scanStarted = now();
  const stale = (mtimeMs: number) => scanStarted - mtimeMs > staleTempMs;
  const verdicts = await Promise.all(names.map((n) => inspectEntry(root, n, stale)));
  const complete: CheckpointInfo[] = [];
  const skipped: SkippedCheckpoint[] = [];
  for (const v of verdicts) {
    if (v.state === 'complete') complete.push(v.info);
    else if (v.state === 'skipped') skipped.push(v.entry);
  }
  complete.sort(newestFirst);
  skipped.sort(newestFirst);
  return { latest: complete[0] ?? null, complete, skipped };
}
