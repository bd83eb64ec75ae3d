/**
 * The job's durable state: what the workflow carries across rounds and continue-as-new.
 *
 * Phases (JobPhase) and their legal transitions:
 *   waiting     fewer live nodes than minNodes. → rendezvous when enough have joined;
 *               → failed when below minNodes for longer than join_timeout, or sooner (after
 *               unusable_timeout) when enough joined but the ones kept out (quarantined,
 *               failing their health check) leave it below: "no usable node" (src/job/health.ts).
 *   rendezvous  round n is forming: last call running (first formation only), then `prepare`
 *               on every participant. A participant that does not answer is dropped as lost and
 *               the round forms again without it. → running, or → waiting if too few are left.
 *   running     every participant runs `runWorkers`. → succeeded when all nodes' workers exit 0;
 *               → restarting on a worker failure, a lost node, an admitted joiner, a drain or a
 *               scale that changes the membership.
 *   restarting  the round's workers are being stopped. → rendezvous (fast: no last call for
 *               known members); → failed when a failure pushes restarts past maxRestarts.
 *   succeeded | failed | cancelled   final. `failed` carries the root cause (lastFailure).
 * A job that cannot recover (restarts exhausted, below minNodes past join_timeout) fails with a
 * one-line reason; nothing is retried behind the user's back.
 */
import type { JobSpec } from './spec';
import type { Stall } from './progress';
import type { LedgerCursor } from '../ledger/types';
import type { Quarantine } from './quarantine';
import type { LedgerRecord } from '../ledger/records';

export type JobPhase =
  | 'waiting'
  | 'rendezvous'
  | 'running'
  | 'restarting'
  | 'succeeded'
  | 'failed'
  | 'cancelled';

export interface NodeRecord {
  nodeId: string;
  address: string;
  slots: number;
  /** Workflow time (ms) of the node's (latest) join. */
  joinedAt: number;
  /** The run of the node's agent that joined (JoinRequest.incarnation), when it said. */
  incarnation?: string;
}

export type DepartureReason = 'lost' | 'drained' | 'left';

export interface Departure {
  nodeId: string;
  reason: DepartureReason;
  round: number;
}

/** Root cause of a failure episode: a worker that failed, or a node that vanished. */
export interface Failure {
  nodeId: string;
  /** Global rank of the failed worker; null when the whole node was lost. */
  rank: number | null;
  exitCode: number | null;
  signal: string | null;
  message: string | null;
  round: number;
}

export interface Checkpoint {
  path: string;
  step: number | null;
  time: string;
}

export interface JobState {
  spec: JobSpec;
  phase: JobPhase;
  /** Number of the current (or last) round; 0 before the first round formed. */
  round: number;
  /** Job-wide failure restarts; membership changes never raise it. */
  restarts: number;
  /** Participants of the current round in group-rank order (oldest surviving member first). */
  members: NodeRecord[];
  /** Joined nodes outside the current round, in join order: newcomers and hot spares. */
  waiting: NodeRecord[];
  /** Recent departures, newest last, so a node's agent can learn it was drained or dropped. */
  departed: Departure[];
  /** Members whose workers already exited 0 in the current round. */
  finished: string[];
  /** Drains accepted but not applied yet (applied at the next round boundary). */
  drains: string[];
  /** Of `drains`, the nodes that left on their own (agent stopped) rather than being drained. */
  leaving: string[];
  /** A failure whose restart is not yet accounted (blame is settled at the next prepare). */
  pendingFailure: Failure | null;
  lastFailure: Failure | null;
  checkpoint: Checkpoint | null;
  /** Workflow time (ms) since which fewer than minNodes nodes were available; null otherwise. */
  belowMinSince: number | null;
  /** Recent joins the job refused (a launch that does not match), newest last, for their agents. */
  rejected: Rejection[];
  /** Jobs submitted to a pool: nodes the pool granted that the job has not given back yet. */
  poolNodes: string[];
  /** Nodes of this job the ledger has quarantined: kept out of rounds until released (src/ledger/quarantine.ts). */
  quarantined: Quarantine[];
  /** Nodes failing their agent's health check: kept out of rounds until a recheck passes (src/job/health.ts). Absent in states of older runs. */
  unhealthy?: Unhealthy[];
  /** Workflow time (ms) since which the nodes kept out have left the job below minNodes (src/job/health.ts); null otherwise. */
  unusableSince?: number | null;
  /** Checkpoint-first drains waiting for their checkpoint, oldest first (src/job/preempt.ts). */
  preempts: Preempt[];
  /** How the recent checkpoint-first drains ended, newest last. */
  preemptions: Preemption[];
  /** The ledger's outbox (workflows/ledger.ts); null when no ledger records the job. */
  ledger: { cursor: LedgerCursor | null; outbox: LedgerRecord[] } | null;
  /** What the last round resumed from and how many failure restarts in a row resumed from it (src/job/progress.ts). */
  stall: Stall | null;
  /**
   * Why the job ended with a verdict a requeue cannot change (src/job/progress.ts), e.g. `no
   * progress in 3 restarts (…)`; null otherwise (and in states from before it existed).
   */
  verdict?: string | null;
}

/** A checkpoint-first drain in progress: the node leaves once a new checkpoint is complete. */
export interface Preempt {
  nodeId: string;
  /** Workflow time (ms) the request arrived. */
  requestedAt: number;
  graceMs: number;
}

/** How a checkpoint-first drain ended: the checkpoint it produced, or null when none came. */
export interface Preemption {
  nodeId: string;
  /** ISO time of the request. */
  requestedAt: string;
  graceMs: number;
  /** The round the node left at the end of. */
  round: number;
  checkpoint: { path: string; step: number | null } | null;
  /** From the request to the checkpoint (or to giving up). */
  tookMs: number;
  /** Why no checkpoint: the grace ran out, a plain drain came first, no checkpoint directory… */
  note?: string;
}

/** How one node's part of a round ended, as the job's round sees it (workflows/group.ts). */
export type NodeOutcome =
  | { nodeId: string; kind: 'succeeded' }
  | { nodeId: string; kind: 'failed'; failure: Failure }
  | { nodeId: string; kind: 'lost'; why: string }
  /** Its agent could not end the round's processes (SIGKILL did not): `message` names the pids. */
  | { nodeId: string; kind: 'stuck'; message: string }
  | { nodeId: string; kind: 'stopped' };

/** A node whose health check failed (src/job/health.ts): kept out of rounds until a recheck passes. */
export interface Unhealthy {
  nodeId: string;
  /** The check's last stderr line (or what ended it: `timed out after 30 s`, `exit code 1`). */
  reason: string;
  exitCode: number | null;
  /** The round whose `prepare` found it failing: the episode, recorded once to the ledger. */
  round: number;
  /** Workflow time (ms) of the latest failing check. */
  at: number;
}

export interface Rejection {
  nodeId: string;
  reason: string;
}

export function initialState(spec: JobSpec, now: number): JobState {
  return {
    spec,
    phase: 'waiting',
    round: 0,
    restarts: 0,
    members: [],
    waiting: [],
    departed: [],
    finished: [],
    drains: [],
    pendingFailure: null,
    lastFailure: null,
    checkpoint: null,
    belowMinSince: now,
    leaving: [],
    rejected: [],
    poolNodes: [],
    quarantined: [],
    unhealthy: [],
    unusableSince: null,
    preempts: [],
    preemptions: [],
    ledger: null,
    stall: null,
  };
}

export const FINAL_PHASES: readonly JobPhase[] = ['succeeded', 'failed', 'cancelled'];
