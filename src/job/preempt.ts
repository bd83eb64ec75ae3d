/**
 * Checkpoint-first drains (`telastic drain --checkpoint-first`, SIGTERM to `telastic run`) as
 * pure decisions. The request waits in `preempts` while the workflow (workflows/preempt.ts) asks
 * every worker of the job to checkpoint and watches for a complete checkpoint newer than the
 * request; then, or once the grace ran out, the node is drained as any other (decide.applyDrain).
 * A plain drain of the same node meanwhile drains it at once.
 */
import { applyDrain, validateDrain } from './decide';
import type { Checkpoint, JobState, Preempt, Preemption } from './state';

export const DEFAULT_DRAIN_GRACE_MS = 60_000;
const MAX_PREEMPTIONS = 20;


/**
 * Accept a checkpoint-first drain. A node outside the running round has no workers to
 * checkpoint: it is drained at once. Asking again for a node already on its way changes nothing.
 */
export function requestCheckpointFirst(state: JobState, nodeId: string, graceMs: number, now: number): JobState {
  if (validateDrain(state, nodeId) !== null) return state;
  if (!state.members.some((m) => m.nodeId === nodeId)) return applyDrain(state, nodeId);
  if (state.drains.includes(nodeId) || state.preempts.some((p) => p.nodeId === nodeId)) return state;
  return { ...state, preempts: [...state.preempts, { nodeId, requestedAt: now, graceMs }] };
}

/**
 * What must end the wait for a checkpoint now, other than a checkpoint: null to keep waiting.
 * The node was drained or left meanwhile, the round it was asked in is over, or the job ended.
 */
export function preemptOverReason(state: JobState, p: Preempt, round: number): string | null {
  if (state.drains.includes(p.nodeId)) return 'drained at once before a checkpoint came';
  if (!state.members.some((m) => m.nodeId === p.nodeId)) return 'the node left the job before a checkpoint came';
  if (state.round !== round || state.phase !== 'running') return `round ${round} ended before a checkpoint came`;
  return null;
}

/** End a checkpoint-first drain: record how it went and drain the node (if it is still here). */
export function finishPreempt(state: JobState, p: Preempt, outcome: { checkpoint: Checkpoint | null; now: number; note?: string }): JobState {
  const record: Preemption = {
    nodeId: p.nodeId,
    requestedAt: new Date(p.requestedAt).toISOString(),
    graceMs: p.graceMs,
    round: state.round,
    checkpoint: outcome.checkpoint ? { path: outcome.checkpoint.path, step: outcome.checkpoint.step } : null,
    tookMs: Math.max(0, outcome.now - p.requestedAt),
    ...(outcome.note ? { note: outcome.note } : {}),
  };
  const next: JobState = {
    ...state,
    preempts: state.preempts.filter((x) => x.nodeId !== p.nodeId),
    preemptions: [...state.preemptions, record].slice(-MAX_PREEMPTIONS),
  };
  return applyDrain(next, p.nodeId);
}

/** One line for `telastic status`: `drain of b: checkpoint-first requested …, checkpoint … after 2.3 s`. */
export function describePreemption(p: Preemption): string {
  const at = p.requestedAt.slice(11, 19);
  const took = `${(p.tookMs / 1000).toFixed(1)} s`;
  const what = p.checkpoint
    ? `checkpoint ${p.checkpoint.path.split('/').pop()}${p.checkpoint.step !== null ? ` (step ${p.checkpoint.step})` : ''} after ${took}`
    : p.note
      ? `no checkpoint: ${p.note} (after ${took})`
      : `no checkpoint within the ${p.graceMs / 1000}s grace`;
  return `drain of ${p.nodeId}: checkpoint-first requested ${at}, ${what}`;
}
