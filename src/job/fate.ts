/**
 * Which nodes the job must tell of their fate after a change of its state: those it just
 * dropped, drained or let leave (a new entry in `departed`), and those whose join it just refused
 * (a new entry in `rejected`). The job nudges each on its own queue (workflows/nudge.ts) and the
 * node's agent asks the job what happened, once, instead of every agent asking every few
 * seconds whether anything did (docs/scale.md: the `node` queries grew with the agents).
 *
 * The states are immutable (src/job/events.ts): an entry that is not the same object as one of
 * `prev` is new. A node told twice asks twice, which is harmless.
 */
import type { JobState } from './state';

export function nodesToTell(prev: JobState, next: JobState): string[] {
  if (prev === next || (prev.departed === next.departed && prev.rejected === next.rejected)) return [];
  const before = new Set<object>([...prev.departed, ...prev.rejected]);
  const told = [...next.departed, ...next.rejected].filter((e) => !before.has(e)).map((e) => e.nodeId);
  return [...new Set(told)];
}
