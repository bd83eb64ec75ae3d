/**
 * The checkpoint activity the workflow runs before every round. The checkpoint directory is
 * shared by all nodes, so any worker that mounts it can run this; it only reads the directory
 * and removes what pruning picks, and is safe to retry (a second run finds less to remove).
 */
import { ApplicationFailure, asyncLocalStorage } from '@temporalio/activity';
import path from 'node:path';
import { CheckpointDirError, InvalidKeepError } from './errors';
import { planPrune, removeAll } from './prune';
import { findCheckpoints, findLatestCheckpoint } from './scan';
import { isNewerCheckpoint } from './newer';
import { REPORT_LIST_CAP, type CheckpointActivities, type CheckpointInfo, type CheckpointReport, type FindCheckpointInput, type LatestScan, type ScanOptions, type WaitForCheckpointInput } from './types';

/** The two levels used here, in pino's argument order (`src/log.ts`'s logger fits). */
export interface CheckpointLogger {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
}

export interface CheckpointDeps {
  /** Defaults to the activity context's logger when running as an activity, else silence. */
  log?: CheckpointLogger;
  scan?: ScanOptions;
  /**
   * A pool agent's policy for `dir` (src/agent/activity-input.ts): its real path, or a refusal
   * when that is not under --allow. The scan and the pruning then work on that path only, so a
   * symlink repointed later changes nothing; reported paths keep the directory as given (the
   * workers of every node open them). Absent: the directory as given (`telastic run`).
   */
  resolveDir?: (dir: string) => Promise<string>;
}

/** The directory to scan, and how a path found in it is reported: under the directory as given. */
async function scanRoot(deps: CheckpointDeps, dir: string): Promise<{ root: string; shown: (p: string) => string }> {
  const given = path.resolve(dir);
  const root = deps.resolveDir ? await deps.resolveDir(dir) : given;
  return { root, shown: root === given ? (p) => p : (p) => path.join(given, path.relative(root, p)) };
}

function logger(deps: CheckpointDeps): CheckpointLogger | undefined {
  if (deps.log) return deps.log;
  const ctx = asyncLocalStorage.getStore(); // undefined outside an activity (unit tests)
  if (!ctx) return undefined;
  return {
    info: (fields, msg) => ctx.log.info(msg, { ...fields }),
    warn: (fields, msg) => ctx.log.warn(msg, { ...fields }),
  };
}

export function createCheckpointActivities(deps: CheckpointDeps = {}): CheckpointActivities {
  async function findCheckpoint(input: FindCheckpointInput): Promise<CheckpointReport> {
    const log = logger(deps);
    const { jobId, dir, keep } = input;
    const { root, shown } = await scanRoot(deps, dir);
    try {
      // Without `keep` only the newest matters (a round's lookup): the scan stops at it, and
      // reports the unusable entries that rank above it. Pruning needs every entry.
      const full = keep === undefined ? null : await findCheckpoints(root, deps.scan);
      const scan: LatestScan = full ?? (await findLatestCheckpoint(root, deps.scan));
      const skipped = scan.skipped.slice(0, REPORT_LIST_CAP).map((s) => ({ ...s, path: shown(s.path) }));
      for (const s of skipped) log?.warn({ jobId, path: s.path, reason: s.reason }, 'checkpoint skipped');
      // Pruning needs a complete checkpoint to keep; planPrune returns nothing without one.
      const pruned = full && keep !== undefined ? await removeAll(planPrune(full, keep)) : { removed: [], failed: [] };
      for (const f of pruned.failed) log?.warn({ jobId, path: shown(f.path), reason: f.reason }, 'checkpoint not pruned');
      if (pruned.removed.length) log?.info({ jobId, removed: pruned.removed.length, keep }, 'checkpoints pruned');
      const latest = scan.latest && { ...scan.latest, path: shown(scan.latest.path) };
      log?.info({ jobId, dir, latest: latest?.path ?? null, step: latest?.step ?? null }, latest ? 'checkpoint found' : 'no complete checkpoint');
      return {
        latest,
        skipped,
        skippedTotal: scan.skipped.length,
        pruned: pruned.removed.slice(0, REPORT_LIST_CAP).map(shown),
        prunedTotal: pruned.removed.length,
      };
    } catch (err) {
      if (err instanceof InvalidKeepError) throw ApplicationFailure.nonRetryable(err.message, err.name);
      if (err instanceof CheckpointDirError && err.code === 'ENOTDIR') throw ApplicationFailure.nonRetryable(err.message, err.name);
      throw err;
    }
  }

  async function waitForCheckpoint(input: WaitForCheckpointInput): Promise<CheckpointInfo | null> {
    const ctx = asyncLocalStorage.getStore();
    const deadline = Date.now() + input.timeoutMs;
    const pollMs = input.pollMs ?? 100;
    const { root, shown } = await scanRoot(deps, input.dir);
    for (;;) {
      ctx?.heartbeat();
      // Only the newest matters here, so the scan stops at it. A scan can fail while a writer
      // renames (or an entry stays unreadable, CheckpointScanError); the next one asks again.
      const found = await findLatestCheckpoint(root, deps.scan).then((s) => s.latest, () => null);
      const latest = found && { ...found, path: shown(found.path) };
      if (isNewerCheckpoint(latest, input.baseline, input.requestedAt)) {
        logger(deps)?.info({ jobId: input.jobId, path: latest!.path, step: latest!.step }, 'checkpoint after the request');
        return latest;
      }
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise((r) => setTimeout(r, Math.min(pollMs, left)));
      if (ctx?.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
    }
  }

  return { findCheckpoint, waitForCheckpoint };
}
