/**
 * Before every round of a job with a checkpoint directory: find the newest complete checkpoint
 * (skipping partial or corrupt ones, which the activity's result records in the history) and
 * prune old ones. Runs on group rank 0's node, which mounts the shared directory.
 */
import * as wf from '@temporalio/workflow';
import { isCancellation } from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import type { Checkpoint, JobState } from '../src/job/state';

/** How long group rank 0's node may take to pick up the lookup, at least. */
const LOOKUP_START_MS = 30_000;

/**
 * What the round resumes from: the newest complete checkpoint found, or, when the lookup fails,
 * the last one this job knew of. Returns what was found, never a state: the caller applies it to
 * the state as it is when the lookup returns.
 */
export async function findResumePoint(s: Readonly<JobState>, nodeId: string): Promise<{ found: Checkpoint | null; resumeFrom?: string }> {
  const { checkpointDir: dir, jobId, rdzv } = s.spec;
  const known = s.checkpoint?.path;
  if (!dir) return { found: null };
  // A lookup that fails resumes from the checkpoint the job knew at its last round start, which
  // misses every checkpoint written since: all that work is done again. So it gets patience: the
  // node answered prepare a moment ago, but a busy one may take more than prepare_timeout to
  // poll, and a scan that met a writer's rename is tried again. (It is pinned to the node, yet
  // retried: a dead node's retry fails the same way, and the round's runWorkers notices it.)
  const act = wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: Math.max(rdzv.prepareTimeoutMs, LOOKUP_START_MS),
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 3, initialInterval: '1s' },
    summary: `round ${s.round}: find the latest checkpoint in ${dir}`,
  });
  try {
    // Newest only (the scan stops at it); pruning to keep_checkpoints reads every entry, so it
    // runs once the round does (pruneOld).
    const report = await act.findCheckpoint({ jobId, dir });
    for (const sk of report.skipped) wf.log.warn('checkpoint skipped', { path: sk.path, reason: sk.reason });
    const latest = report.latest;
    if (!latest) return { found: null };
    return { found: { path: latest.path, step: latest.step, time: latest.time }, resumeFrom: latest.path };
  } catch (err) {
    // The failure is in the history; resume from the last checkpoint this job knew of, if any.
    wf.log.warn('checkpoint lookup failed', { error: String(err) });
    return { found: null, ...(known ? { resumeFrom: known } : {}) };
  }
}

/**
 * Prune the job's checkpoint directory to its newest `keepCheckpoints`, beside the running round
 * (a scan of every entry can take long in a large directory; the round does not wait for it).
 * Never fails the round: what went wrong is in the history.
 */
export async function pruneOld(s: Readonly<JobState>, nodeId: string): Promise<void> {
  const { checkpointDir: dir, jobId, keepCheckpoints: keep } = s.spec;
  if (!dir || keep === undefined) return;
  const act = wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: Math.max(s.spec.rdzv.prepareTimeoutMs, LOOKUP_START_MS),
    startToCloseTimeout: '10 minutes',
    retry: { maximumAttempts: 1 },
    summary: `round ${s.round}: prune ${dir} to the newest ${keep} checkpoint(s)`,
  });
  await act.findCheckpoint({ jobId, dir, keep }).then(
    (r) => void (r.prunedTotal && wf.log.info('checkpoints pruned', { removed: r.prunedTotal })),
    (err: unknown) => void (isCancellation(err) || wf.log.warn('checkpoint pruning failed', { error: String(err) })),
  );
}
