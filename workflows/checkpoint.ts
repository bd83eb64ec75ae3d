/**
 * Before every round of a job with a checkpoint directory: find the newest complete checkpoint
 * (skipping partial or corrupt ones, which the activity's result records in the history) and
 * prune old ones. Runs on group rank 0's node, which mounts the shared directory.
 */
import * as wf from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import type { JobState } from '../src/job/state';

/** How long group rank 0's node may take to pick up the lookup, at least. */
const LOOKUP_START_MS = 30_000;

export async function findResumePoint(s: JobState, nodeId: string): Promise<{ state: JobState; resumeFrom?: string }> {
  const dir = s.spec.checkpointDir;
  if (!dir) return { state: s };
  // A lookup that fails resumes from the checkpoint the job knew at its last round start, which
  // misses every checkpoint written since: all that work is done again. So it gets patience: the
  // node answered prepare a moment ago, and a busy one may take more than prepare_timeout to poll,
  // and a scan that met a writer's rename is tried again (patched: older runs replay without).
  const patient = wf.patched('checkpoint-lookup-patience');
  const act = wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: patient ? Math.max(s.spec.rdzv.prepareTimeoutMs, LOOKUP_START_MS) : s.spec.rdzv.prepareTimeoutMs,
    startToCloseTimeout: '2 minutes',
    retry: patient ? { maximumAttempts: 3, initialInterval: '1s' } : { maximumAttempts: 1 },
    summary: `round ${s.round}: find the latest checkpoint in ${dir}`,
  });
  try {
    const report = await act.findCheckpoint({ jobId: s.spec.jobId, dir, keep: s.spec.keepCheckpoints });
    for (const sk of report.skipped) wf.log.warn('checkpoint skipped', { path: sk.path, reason: sk.reason });
    const latest = report.latest;
    if (!latest) return { state: s };
    return { state: { ...s, checkpoint: { path: latest.path, step: latest.step, time: latest.time } }, resumeFrom: latest.path };
  } catch (err) {
    // The failure is in the history; resume from the last checkpoint this job knew of, if any.
    wf.log.warn('checkpoint lookup failed', { error: String(err) });
    return { state: s, resumeFrom: s.checkpoint?.path };
  }
}
