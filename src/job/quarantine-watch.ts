/**
 * When a job asks the ledger which of its nodes are quarantined, as pure decisions: when a node
 * joins (before the round forms, as a rule: the first round's last call gives it time), after a
 * failure was written (the count includes it), and every RECHECK_MS while one is kept out, to
 * learn of its release. The answer is the ledger host's decision (src/ledger/quarantine.ts),
 * applied as a `quarantine` event; a ledger that does not answer leaves the job as it is.
 * workflows/ledger.ts asks, beside the job's main loop.
 */
import type { JobState, NodeRecord } from './state';

/** While a node is kept out, how often the job asks whether it was released. */
export const RECHECK_MS = 15_000;

export interface QuarantineWatch {
  /** `${nodeId}@${joinedAt}` of every node asked about: a node that rejoins is asked about again. */
  seen: ReadonlySet<string>;
  /** A failure was written since the last question. */
  failure: boolean;
  /** Workflow time (ms) of the last question. */
  lastCheck: number;
}

const key = (n: NodeRecord) => `${n.nodeId}@${n.joinedAt}`;
const nodes = (s: JobState) => [...s.members, ...s.waiting];

export function startWatch(now: number): QuarantineWatch {
  return { seen: new Set(), failure: false, lastCheck: now };
}

/** A node the watch has not asked about yet. */
export function hasUnseen(w: QuarantineWatch, s: JobState): boolean {
  return nodes(s).some((n) => !w.seen.has(key(n)));
}

/** Whether to ask now; `unseen` is hasUnseen(w, s), which the caller may cache. */
export function checkDue(w: QuarantineWatch, s: JobState, now: number, unseen = hasUnseen(w, s)): boolean {
  if (w.failure || unseen) return true;
  return s.quarantined.length > 0 && now - w.lastCheck >= RECHECK_MS;
}

/** Ms until the next release check, or null when no node is kept out. */
export function recheckIn(w: QuarantineWatch, s: JobState, now: number): number | null {
  return s.quarantined.length ? Math.max(1, w.lastCheck + RECHECK_MS - now) : null;
}

export function failureRecorded(w: QuarantineWatch): QuarantineWatch {
  return { ...w, failure: true };
}

/** The watch once it asks about the job's nodes now, and whom it asks. */
export function ask(w: QuarantineWatch, s: JobState, now: number): { watch: QuarantineWatch; nodeIds: string[] } {
  const asked = nodes(s);
  return { watch: { seen: new Set([...w.seen, ...asked.map(key)]), failure: false, lastCheck: now }, nodeIds: asked.map((n) => n.nodeId) };
}
