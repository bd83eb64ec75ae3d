/**
 * Pruning: keep the newest `keep` complete checkpoints; remove older complete ones and the
 * partial, corrupt or stale leftovers older than the newest complete one. Nothing newer than
 * the newest complete checkpoint is ever removed — it may be a write still in progress.
 */
import { rm } from 'node:fs/promises';
import { mapBounded } from './bounded';
import { InvalidKeepError } from './errors';
import { SCAN_CONCURRENCY } from './list';
import { findCheckpoints } from './scan';
import type { CheckpointInfo, PruneResult, Scan, ScanOptions, SkippedCheckpoint } from './types';

type Dated = Pick<SkippedCheckpoint, 'step' | 'time'>;

/** Older than `newest` by time, and not at a later step (when both steps are known). */
function olderThan(e: Dated, newest: CheckpointInfo): boolean {
  if (Date.parse(e.time) >= Date.parse(newest.time)) return false;
  return e.step === null || newest.step === null || e.step <= newest.step;
}

/** What to remove, decided from a scan alone (pure). Throws InvalidKeepError for keep < 1. */
export function planPrune(scan: Scan, keep: number): string[] {
  if (!Number.isInteger(keep) || keep < 1) throw new InvalidKeepError(keep);
  const newest = scan.latest;
  if (!newest) return [];
  const old = scan.complete.slice(keep).filter((c) => olderThan(c, newest));
  const leftovers = scan.skipped.filter((s) => olderThan(s, newest));
  return [...old, ...leftovers].map((e) => e.path);
}

/**
 * Remove files and directories (recursively), SCAN_CONCURRENCY at a time, reported in the
 * order given; a failure is reported, not thrown.
 */
export async function removeAll(paths: string[]): Promise<PruneResult> {
  const outcomes = await mapBounded(paths, SCAN_CONCURRENCY, async (p) => {
    try {
      await rm(p, { recursive: true, force: true });
      return null;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code ?? String(err);
    }
  });
  const result: PruneResult = { removed: [], failed: [] };
  paths.forEach((p, i) => {
    const reason = outcomes[i];
    if (reason) result.failed.push({ path: p, reason });
    else result.removed.push(p);
  });
  return result;
}

export async function pruneCheckpoints(dir: string, keep: number, options: ScanOptions = {}): Promise<PruneResult> {
  if (!Number.isInteger(keep) || keep < 1) throw new InvalidKeepError(keep);
  return removeAll(planPrune(await findCheckpoints(dir, options), keep));
}
