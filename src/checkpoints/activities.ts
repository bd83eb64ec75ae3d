/**
 * The checkpoint activity the workflow runs before every round. The checkpoint directory is
 * shared by all nodes, so any worker that mounts it can run this; it only reads the directory
 * and removes what pruning picks, and is safe to retry (a second run finds less to remove).
 */
import { ApplicationFailure, asyncLocalStorage } from '@temporalio/activity';
import { CheckpointDirError, InvalidKeepError } from './errors';
import { planPrune, removeAll } from './prune';
import { findCheckpoints } from './scan';
import { isNewerCheckpoint } from '../job/preempt';
import { REPORT_LIST_CAP, type CheckpointActivities, type CheckpointInfo, type CheckpointReport, type FindCheckpointInput, type ScanOptions, type WaitForCheckpointInput } from './types';

/** The two levels used here, in pino's argument order (`src/log.ts`'s logger fits). */
export interface CheckpointLogger {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
}

export interface CheckpointDeps {
  /** Defaults to the activity context's logger when running as an activity, else silence. */
  log?: CheckpointLogger;
  scan?: ScanOptions;
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
    try {
      const scan = await findCheckpoints(dir, deps.scan);
      for (const s of scan.skipped.slice(0, REPORT_LIST_CAP)) log?.warn({ jobId, path: s.path, reason: s.reason }, 'checkpoint skipped');
      // Pruning needs a complete checkpoint to keep; planPrune returns nothing without one.
      const pruned = keep === undefined ? { removed: [], failed: [] } : await removeAll(planPrune(scan, keep));
      for (const f of pruned.failed) log?.warn({ jobId, path: f.path, reason: f.reason }, 'checkpoint not pruned');
      if (pruned.removed.length) log?.info({ jobId, removed: pruned.removed.length, keep }, 'checkpoints pruned');
      log?.info({ jobId, dir, latest: scan.latest?.path ?? null, step: scan.latest?.step ?? null }, scan.latest ? 'checkpoint found' : 'no complete checkpoint');
      return {
        latest: scan.latest,
        skipped: scan.skipped.slice(0, REPORT_LIST_CAP),
        skippedTotal: scan.skipped.length,
        pruned: pruned.removed.slice(0, REPORT_LIST_CAP),
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
    for (;;) {
      ctx?.heartbeat();
      // A scan can fail while a writer renames; the next one sees the directory settled.
      const latest = await findCheckpoints(input.dir, deps.scan).then((s) => s.latest, () => null);
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
