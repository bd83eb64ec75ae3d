/**
 * Tell nodes their fate changed (src/job/fate.ts): one short `nudge` on each node's own queue,
 * not awaited. The node's agent then asks the job once. A nudge nobody picks up within the
 * heartbeat timeout (a dead node) times out and is forgotten. A nudge only hurries the agent:
 * one that missed it still asks once the job has left it idle for its poll interval
 * (src/agent/job-membership.ts),
 * so past MAX_IN_FLIGHT the job nudges no one more rather than near the server's limit of
 * pending activities per execution.
 */
import * as wf from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import type { JobState } from '../src/job/state';

export const MAX_IN_FLIGHT = 16;

/** Nudges of one job run: how many are in flight. */
export class Nudges {
  inFlight = 0;

  send(state: JobState, nodeIds: string[]): void {
    // Histories from before nudges replay without them.
    if (nodeIds.length === 0 || !wf.patched('nudge-fate')) return;
    for (const nodeId of nodeIds) {
      if (this.inFlight >= MAX_IN_FLIGHT) return;
      const act = wf.proxyActivities<NodeActivities>({
        taskQueue: nodeQueue(nodeId),
        scheduleToStartTimeout: state.spec.rdzv.heartbeatTimeoutMs,
        startToCloseTimeout: '10s',
        retry: { maximumAttempts: 1 },
        summary: `tell ${nodeId} its part in the job changed`,
      });
      this.inFlight++;
      act.nudge({ jobId: state.spec.jobId, nodeId }).catch(() => undefined).finally(() => this.inFlight--);
    }
  }
}
