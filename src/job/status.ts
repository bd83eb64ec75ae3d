/** The status object: answer of the `status` query and of `telastic status JOB --json`. */
import type { Checkpoint, JobPhase, JobState, Preemption } from './state';
import { isQuarantined } from './decide';
import { isKeptOut, unhealthyOf, unusableReason, unusableTimeoutMs } from './health';

/**
 * `checkpointing`: a checkpoint-first drain waits for its checkpoint; the node runs on and becomes
 * `draining` once released (a leave meanwhile makes it `draining` at once, which its agent waits for).
 */
export type NodeState = 'running' | 'preparing' | 'succeeded' | 'waiting' | 'spare' | 'quarantined' | 'unhealthy' | 'draining' | 'checkpointing' | 'lost' | 'drained' | 'left';

export interface NodeStatus {
  nodeId: string;
  address: string | null;
  groupRank: number | null;
  state: NodeState;
}

export interface JobStatus {
  jobId: string;
  state: JobPhase;
  round: number;
  restarts: number;
  maxRestarts: number;
  minNodes: number;
  maxNodes: number;
  worldSize: number;
  nodes: NodeStatus[];
  spares: string[];
  lastFailure: { nodeId: string; rank: number | null; exitCode: number | null; signal: string | null; message: string | null } | null;
  checkpoint: Checkpoint | null;
  /** Why the job ended with a do-not-requeue verdict (src/job/progress.ts); absent otherwise. */
  verdict?: string;
  /** Nodes the ledger keeps out of this job's rounds, and why (absent when none). */
  quarantined?: { nodeId: string; reason: string }[];
  /** Nodes failing their agent's health check, kept out until a recheck passes, and the check's last stderr line (absent when none). */
  unhealthy?: { nodeId: string; reason: string }[];
  /**
   * Enough nodes joined but those kept out (quarantined, unhealthy) leave the job below minNodes:
   * why, since when, and how long it waits before it fails with that reason (absent otherwise).
   */
  unusable?: { reason: string; since: string | null; timeoutMs: number };
  /** Checkpoint-first drains waiting for their checkpoint (absent when none). */
  preempting?: { nodeId: string; requestedAt: string; graceMs: number }[];
  /** How recent checkpoint-first drains ended, newest last (absent when none). */
  preemptions?: Preemption[];
}

function memberState(state: JobState, nodeId: string): NodeState {
  if (state.drains.includes(nodeId)) return 'draining';
  if (state.preempts.some((p) => p.nodeId === nodeId)) return 'checkpointing';
  if (state.finished.includes(nodeId)) return 'succeeded';
  return state.phase === 'running' ? 'running' : 'preparing';
}

export function toStatus(state: JobState): JobStatus {
  const { spec } = state;
  const full = state.members.length >= spec.maxNodes;
  const out = isKeptOut(state);
  const quarantined = isQuarantined(state);
  const sick = unhealthyOf(state);
  const unusable = unusableReason(state);
  const nodes: NodeStatus[] = [
    ...state.members.map((m, groupRank) => ({ nodeId: m.nodeId, address: m.address, groupRank, state: memberState(state, m.nodeId) })),
    ...state.waiting.map((w) => ({ nodeId: w.nodeId, address: w.address, groupRank: null, state: (quarantined(w.nodeId) ? 'quarantined' : out(w.nodeId) ? 'unhealthy' : full ? 'spare' : 'waiting') as NodeState })),
    ...state.departed.map((d) => ({ nodeId: d.nodeId, address: null, groupRank: null, state: d.reason as NodeState })),
  ];
  const f = state.lastFailure;
  return {
    jobId: spec.jobId,
    state: state.phase,
    round: state.round,
    restarts: state.restarts,
    maxRestarts: spec.maxRestarts,
    minNodes: spec.minNodes,
    maxNodes: spec.maxNodes,
    worldSize: state.members.reduce((s, m) => s + m.slots, 0),
    nodes,
    spares: full ? state.waiting.filter((w) => !out(w.nodeId)).map((w) => w.nodeId) : [],
    lastFailure: f ? { nodeId: f.nodeId, rank: f.rank, exitCode: f.exitCode, signal: f.signal, message: f.message } : null,
    checkpoint: state.checkpoint,
    ...(state.verdict ? { verdict: state.verdict } : {}),
    ...(state.quarantined.length ? { quarantined: state.quarantined } : {}),
    ...(sick.length ? { unhealthy: sick.map((u) => ({ nodeId: u.nodeId, reason: u.reason })) } : {}),
    ...(unusable ? { unusable: { reason: unusable, since: state.unusableSince != null ? new Date(state.unusableSince).toISOString() : null, timeoutMs: unusableTimeoutMs(state) } } : {}),
    ...(state.preempts.length ? { preempting: state.preempts.map((p) => ({ nodeId: p.nodeId, requestedAt: new Date(p.requestedAt).toISOString(), graceMs: p.graceMs })) } : {}),
    ...(state.preemptions.length ? { preemptions: state.preemptions } : {}),
  };
}

/** What an agent learns about its own node (the `node` query): small whatever the job's size. */
export interface NodeView {
  job: JobPhase;
  /** The node's state in the job; 'pending' until its join arrived, 'rejected' with a reason. */
  node: NodeState | 'pending' | 'rejected';
  reason?: string;
}

export function nodeView(state: JobState, nodeId: string): NodeView {
  const rejected = state.rejected.find((r) => r.nodeId === nodeId);
  if (rejected) return { job: state.phase, node: 'rejected', reason: rejected.reason };
  const node = toStatus(state).nodes.find((n) => n.nodeId === nodeId);
  return { job: state.phase, node: node?.state ?? 'pending' };
}
