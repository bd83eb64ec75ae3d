/**
 * Rechecks of nodes failing their health check (src/job/health.ts), beside the job's main loop:
 * every HEALTH_RECHECK_MS, `checkHealth` on each such node still in the job, off the round, so a
 * running job is never stopped for a node that is still sick. A pass lets the node back in (a
 * running job with room admits it as it admits any newcomer); a failure updates its reason.
 */
import * as wf from '@temporalio/workflow';
import { ActivityCancellationType, isCancellation } from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import { rechecks } from '../src/job/health';
import type { JobRun } from './job-run';

/**
 * Pinned to the node's own queue: the check runs on that machine. A node that does not pick it
 * up within the prepare bound, or stops heartbeating, is simply asked again later (its loss is
 * noticed by the round, as any waiting node's).
 */
function onNode(run: JobRun, nodeId: string, reason: string) {
  const { prepareTimeoutMs, heartbeatTimeoutMs } = run.state.spec.rdzv;
  return wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: prepareTimeoutMs,
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    summary: `health recheck of ${nodeId} (failing: ${JSON.stringify(reason).slice(0, 120)})`,
  });
}

export async function keepCheckingHealth(run: JobRun): Promise<void> {
  while (!run.ended) {
    const due = rechecks(run.state);
    if (due.length === 0) {
      await wf.condition(() => run.ended || rechecks(run.state).length > 0);
      continue;
    }
    const next = Math.min(...due.map((d) => d.dueAt));
    const wait = next - Date.now();
    if (wait > 0) {
      // Woken early when the set of failing nodes changes (one left, or a new one failed).
      const before = run.state.unhealthy;
      await wf.condition(() => run.ended || run.state.unhealthy !== before, wait, { summary: 'health recheck: ask failing nodes again' });
      continue;
    }
    const now = Date.now();
    await Promise.all(
      due.filter((d) => d.dueAt <= now).map(async ({ nodeId }) => {
        const reason = run.state.unhealthy?.find((u) => u.nodeId === nodeId)?.reason ?? '';
        const { spec, round } = run.state;
        const input = { jobId: spec.jobId, round, nodeId, ...(spec.checkpointDir ? { checkpointDir: spec.checkpointDir } : {}) };
        try {
          const result = await onNode(run, nodeId, reason).checkHealth(input);
          run.apply({ type: 'healthChecked', nodeId, result, now: Date.now() });
        } catch (err) {
          if (isCancellation(err)) throw err;
          // Not answered: keep the node out, ask again after the interval.
          run.apply({ type: 'healthChecked', nodeId, result: { ok: false, reason, exitCode: null }, now: Date.now() });
        }
        run.publish();
      }),
    );
  }
}
