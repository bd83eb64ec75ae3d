/**
 * The activities a node agent runs for its jobs. They are pinned to the node's own task queue
 * (`telastic.node.<nodeId>`) because they start and stop processes on that machine; a dead or
 * frozen node is noticed by the workflow through the runWorkers heartbeat timeout or an
 * unanswered `prepare` (schedule-to-start timeout), never by retrying elsewhere.
 */
import type { RoundAssignment } from '../src/job/assignment';
import type { CheckpointActivities } from '../src/checkpoints/types';

export interface PrepareInput {
  jobId: string;
  round: number;
  nodeId: string;
}

export interface PrepareResult {
  nodeId: string;
  /** A free TCP port on this node, reserved for MASTER_PORT should it be group rank 0. */
  port: number;
}

export interface WorkerFailure {
  localRank: number;
  rank: number;
  exitCode: number | null;
  signal: string | null;
  message: string | null;
  timestamp: number;
}

export type RunWorkersResult =
  | { state: 'succeeded' }
  | { state: 'failed'; failure: WorkerFailure };

/** Node activities; `findCheckpoint` runs on a participant because it mounts the shared directory. */
export interface NodeActivities extends CheckpointActivities {
  /** Health check, stop whatever this node still runs for the job, reserve a master port. */
  prepare(input: PrepareInput): Promise<PrepareResult>;
  /** Run the node's workers for one round until they all exit, one fails, or it is cancelled. */
  runWorkers(assignment: RoundAssignment): Promise<RunWorkersResult>;
}

export const CONTROL_QUEUE = 'telastic';

export function nodeQueue(nodeId: string): string {
  return `telastic.node.${nodeId}`;
}
