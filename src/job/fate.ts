/**
 * Which nodes the job must tell of their fate after a change of its state: those it just
 * dropped, drained or let leave (a new entry in `departed`), and those whose join it just refused
 * (a new entry in `rejected`). The job nudges each on its own queue with its fate
 * (workflows/nudge.ts), instead of every agent asking every few seconds whether anything happened
 * (docs/scale.md: the `node` queries grew with the agents, and after a mass drop the nudged
 * agents' queries did too).
 *
 * The states are immutable (src/job/events.ts): an entry that is not the same object as one of
 * `prev` is new. A node told twice asks twice, which is harmless.
 */
import type { DepartureReason, JobState } from './state';

/**
 * What a nudge tells a node (NudgeInput.fate): dropped as lost, drained, let leave, or its join
 * refused (with why), and the round the job was in then. The agent acts on a drop as lost
 * without asking when the nudge came from the job's own execution and is about this run of the
 * agent (src/agent/nudge-fate.ts); on anything else it asks the job.
 */
export interface NodeFate {
  node: DepartureReason | 'rejected';
  reason?: string;
  round: number;
}

/** A node's fate in `state`, as the `node` query would answer it (src/job/status.ts nodeView); null when it has none. */
export function fateOf(state: JobState, nodeId: string): NodeFate | null {
  const rejected = state.rejected.find((r) => r.nodeId === nodeId);
  if (rejected) return { node: 'rejected', reason: rejected.reason, round: state.round };
  const gone = state.departed.find((d) => d.nodeId === nodeId);
  return gone ? { node: gone.reason, round: gone.round } : null;
}

export function nodesToTell(prev: JobState, next: JobState): string[] {
  if (prev === next || (prev.departed === next.departed && prev.rejected === next.rejected)) return [];
  const before = new Set<object>([...prev.departed, ...prev.rejected]);
  const told = [...next.departed, ...next.rejected].filter((e) => !before.has(e)).map((e) => e.nodeId);
  return [...new Set(told)];
}
