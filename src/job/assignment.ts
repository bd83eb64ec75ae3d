import type { Entrypoint } from './spec';
import type { WatchTarget } from './peer-watch';

/** What a job submitted to a pool runs: the submitter's command and environment variables. */
export interface Launch {
  entrypoint: Entrypoint;
  env: Record<string, string>;
  /** The job's checkpoint directory: agents list and prune it, so it too must be allowed. */
  checkpointDir?: string;
}

/**
 * What the job workflow tells one node for one round: everything a node needs to compute the
 * torchrun environment of its workers. Pure data; workflow code builds it.
 */
export interface RoundAssignment {
  jobId: string;
  round: number;
  nodeId: string;
  role: string;
  groupRank: number;
  groupWorldSize: number;
  /** Global rank of this node's local rank 0: sum of the local world sizes of lower group ranks. */
  rankOffset: number;
  localWorldSize: number;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  /** Job-wide failure restarts so far (membership changes do not raise it). */
  restartCount: number;
  maxRestarts: number;
  /** Checkpoint directory shared by the job's nodes, when the job has one. */
  checkpointDir?: string;
  /** The checkpoint workers resume from, when one was found. */
  resumeFrom?: string;
  /** How often the node heartbeats `runWorkers` (src/job/groups.ts heartbeatIntervalMs). */
  heartbeatIntervalMs: number;
  /** `--progress-timeout`: the node's workers are hung when none reported progress for this long. */
  progressTimeoutMs?: number;
  /** `--progress-start-timeout`: the same before the workers' first report. */
  progressStartTimeoutMs?: number;
  /** Jobs submitted to a pool: what to run (the pool agent checks it against its --allow). */
  launch?: Launch;
  /** The agent this node's agent watches during the round (src/job/peer-watch.ts); none in a ring of one. */
  watch?: WatchTarget;
}
