/**
 * Tell nodes their fate (src/job/fate.ts): one short `nudge` on each node's own queue, carrying
 * what happened, not awaited. The node's agent acts on it without asking the job when the nudge
 * came from the job's own execution (activities/node.ts checks); otherwise it asks once. A nudge
 * nobody picks up within the heartbeat timeout (a dead node) times out and is forgotten; a node
 * that missed one still asks once the job has left it idle (src/agent/job-membership.ts).
 * At most MAX_IN_FLIGHT at once, so a mass drop stays far from the server's limit of pending
 * activities per execution; the rest wait their turn in this run (a continue-as-new forgets
 * them, and those nodes ask once idle).
 */
import * as wf from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import { fateOf } from '../src/job/fate';
import type { JobState } from '../src/job/state';

export const MAX_IN_FLIGHT = 16;

interface Told {
  nodeId: string;
  state: JobState;
}

/** Nudges of one job run: how many are in flight, and those waiting for a slot. */
export class Nudges {
  inFlight = 0;
  readonly #queue: Told[] = [];

  send(state: JobState, nodeIds: string[]): void {
    // Histories from before nudges replay without them.
    if (nodeIds.length === 0 || !wf.patched('nudge-fate')) return;
    // Histories from before the queue replay without it: past the limit, no one more.
    const queued = wf.patched('nudge-queue');
    for (const nodeId of nodeIds) {
      if (this.inFlight < MAX_IN_FLIGHT) this.#start({ nodeId, state });
      else if (queued) this.#queue.push({ nodeId, state });
      else return;
    }
  }

  #start({ nodeId, state }: Told): void {
    const act = wf.proxyActivities<NodeActivities>({
      taskQueue: nodeQueue(nodeId),
      scheduleToStartTimeout: state.spec.rdzv.heartbeatTimeoutMs,
      startToCloseTimeout: '10s',
      retry: { maximumAttempts: 1 },
      summary: `tell ${nodeId} its part in the job changed`,
    });
    this.inFlight++;
    const fate = fateOf(state, nodeId);
    act
      .nudge({ jobId: state.spec.jobId, nodeId, ...(fate ? { fate } : {}) })
      .catch(() => undefined)
      .finally(() => {
        this.inFlight--;
        const next = this.#queue.shift();
        if (next) this.#start(next);
      });
  }
}
