/**
 * The activities a node agent runs for its jobs. They are pinned to the node's own task queue
 * (`telastic.node.<nodeId>`) because they start and stop processes on that machine; a dead or
 * frozen node is noticed by the workflow through the runWorkers heartbeat timeout or an
 * unanswered `prepare` (schedule-to-start timeout), never by retrying elsewhere.
 */
import type { WorkerFailure } from '../src/agent/workers/types';
import type { Launch, RoundAssignment } from '../src/job/assignment';
import type { CheckpointActivities } from '../src/checkpoints/types';
import type { Quarantine } from '../src/job/quarantine';
import type { LedgerRecord } from '../src/ledger/records';
import type { NodeFate } from '../src/job/fate';

export interface PrepareInput {
  jobId: string;
  round: number;
  nodeId: string;
  /** What the node is to run, for jobs submitted to a pool; its agent checks it is allowed. */
  launch?: Launch;
  /** The job's checkpoint directory, for the agent's health check (TELASTIC_CHECKPOINT_DIR). */
  checkpointDir?: string;
}

/** A recheck of a node failing its health check (workflows/health.ts). */
export interface CheckHealthInput {
  jobId: string;
  round: number;
  nodeId: string;
  checkpointDir?: string;
}

export type CheckHealthResult = { ok: true } | { ok: false; reason: string; exitCode: number | null };

export interface PrepareResult {
  nodeId: string;
  /** A free TCP port on this node, reserved for MASTER_PORT should it be group rank 0. */
  port: number;
  /** The agent's peer watch listener (src/agent/peer-watch.ts); absent from agents of older builds. */
  watchPort?: number;
}

/** A round's workers on this node: all exited 0, or the first to fail (its pid means nothing off the node). */
export type RunWorkersResult =
  | { state: 'succeeded' }
  | { state: 'failed'; failure: Omit<WorkerFailure, 'pid'> }
  /** Processes of the round that SIGKILL did not end: `message` is describeStuck's line. */
  | { state: 'stuck'; message: string }
  /**
   * The connection to the agent this node watched (assignment.watch) closed unannounced: that
   * agent is gone (src/job/peer-watch.ts). This node's workers are being stopped; `peer` is to blame.
   */
  | { state: 'peerLost'; peer: string; message: string };

export interface SignalWorkersInput {
  jobId: string;
  round: number;
  /** Why, for the agent's log (`checkpoint-first drain of node-b`). */
  reason: string;
}

/** The job changed this node's fate (dropped, drained, refused: src/job/fate.ts); the agent asks the job which. */
export interface NudgeInput {
  jobId: string;
  nodeId: string;
  /** What happened to the node (src/job/fate.ts); absent in nudges of older job runs. */
  fate?: NodeFate;
}

/** Node activities; `findCheckpoint` runs on a participant because it mounts the shared directory. */
export interface NodeActivities extends CheckpointActivities {
  /**
   * Stop whatever this node still runs for the job, run the agent's health check (failing with
   * HEALTH_CHECK_FAILED and the check's last stderr line), reserve a master port.
   */
  prepare(input: PrepareInput): Promise<PrepareResult>;
  /** Run the agent's health check only (passes when the agent has none). */
  checkHealth(input: CheckHealthInput): Promise<CheckHealthResult>;
  /** Run the node's workers for one round until they all exit, one fails, or it is cancelled. */
  runWorkers(assignment: RoundAssignment): Promise<RunWorkersResult>;
  /**
   * Send the agent's checkpoint signal (--checkpoint-signal, default SIGUSR1) to every worker it
   * runs for this job and round; returns the signal and how many workers got it (0 when none run).
   */
  signalWorkers(input: SignalWorkersInput): Promise<{ signal: string; signalled: number }>;
  /** Hand the nudge to whoever follows the job on this node (NodeDeps.onNudge); answers at once. */
  nudge(input: NudgeInput): Promise<void>;
}

/** What a pool agent runs for the pool itself (workflows/pool.ts). */
export interface PoolActivities {
  /**
   * The pool's lease on one run of the agent: heartbeats until cancelled. A lease of an earlier
   * run (another incarnation) fails at once. A lease that misses heartbeats marks the node lost.
   */
  holdNode(input: { pool: string; nodeId: string; incarnation: string }): Promise<void>;
}

/** The ledger's activities (activities/ledger.ts), on LEDGER_QUEUE: only processes with a database serve it. */
export interface LedgerActivities {
  /** Answers at once: a ledger is recording. */
  ledgerProbe(): Promise<void>;
  /** Write records idempotently (keyed by job and seq); returns how many were new. */
  recordLedger(records: LedgerRecord[]): Promise<number>;
  /** Of these nodes, the ones in quarantine now (the ledger host's policy decides; src/ledger/quarantine.ts). */
  ledgerQuarantine(nodeIds: string[]): Promise<Quarantine[]>;
}

export const LEDGER_QUEUE = 'telastic.ledger';

/**
 * The failure type of `prepare` or `runWorkers` on a node whose earlier workers SIGKILL did not
 * end: its message is describeStuck's line. The job takes the node out (src/job/events.ts).
 */
export const WORKERS_STUCK = 'WorkersStuck';

/** The failure type of a node activity whose (pool) agent refuses the job's command. */
export const NOT_ALLOWED = 'NotAllowed';

/** The failure type of a `prepare` whose agent's health check failed; details: [{ exitCode }]. */
export const HEALTH_CHECK_FAILED = 'HealthCheckFailed';

export const CONTROL_QUEUE = 'telastic';

export function nodeQueue(nodeId: string): string {
  return `telastic.node.${nodeId}`;
}
