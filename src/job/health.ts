/**
 * Node health checks (`--health-check CMD`, the agent operator's) as the job sees them, and the
 * "no usable node" verdict, as pure decisions. A node whose check fails in `prepare` is kept out
 * of rounds (joined, not given a rank) until a recheck passes: workflows/health.ts asks every
 * HEALTH_RECHECK_MS, off the round, so a running job is never interrupted for a node still sick.
 * Each failing episode (healthy → failing) is one failure to the ledger, so it counts toward
 * quarantine (src/ledger/derive.ts); the rechecks of one episode do not.
 *
 * When the nodes kept out (quarantined or failing their check) are what keeps a job below
 * minNodes, the job says so (`unusable` in the status object, the first line of `telastic status`)
 * and fails after `unusable_timeout` (--rdzv-conf, default 60 s; never later than join_timeout)
 * with that reason and exit code 3, do not requeue (docs/cli.md).
 */
import type { JobState, NodeRecord, Unhealthy } from './state';

export type { Unhealthy } from './state';

/** How often a node failing its check is checked again, off the round. */
export const HEALTH_RECHECK_MS = 10_000;
/** `unusable_timeout`: how long a job kept below min by nodes it may not use waits before it fails. */
export const DEFAULT_UNUSABLE_TIMEOUT_MS = 60_000;
/** The failure type (and verdict) of a job that has no node it may use. */
export const NO_USABLE_NODE = 'NoUsableNode';

export const unhealthyOf = (s: JobState): Unhealthy[] => s.unhealthy ?? [];

/** A predicate: is this node kept out of rounds (quarantined, or failing its health check)? */
export function isKeptOut(s: JobState): (nodeId: string) => boolean {
  const sick = unhealthyOf(s);
  if (s.quarantined.length === 0 && sick.length === 0) return () => false;
  const ids = new Set([...s.quarantined.map((q) => q.nodeId), ...sick.map((u) => u.nodeId)]);
  return (nodeId) => ids.has(nodeId);
}

/**
 * Nodes whose check failed in `prepare`: kept out from now on. A node already failing keeps its
 * episode (its round); a new one starts an episode.
 */
export function markUnhealthy(s: JobState, failed: Omit<Unhealthy, 'round' | 'at'>[], now: number): JobState {
  if (failed.length === 0) return s;
  const before = new Map(unhealthyOf(s).map((u) => [u.nodeId, u]));
  for (const f of failed) before.set(f.nodeId, { ...f, round: before.get(f.nodeId)?.round ?? s.round, at: now });
  return { ...s, unhealthy: [...before.values()] };
}

/** A recheck's answer: a pass lets the node back (admitted like a newcomer); a failure updates the reason. */
export function healthChecked(s: JobState, nodeId: string, r: { ok: true } | { ok: false; reason: string; exitCode: number | null }, now: number): JobState {
  const sick = unhealthyOf(s);
  const u = sick.find((x) => x.nodeId === nodeId);
  if (!u) return s;
  if (r.ok) return { ...s, unhealthy: sick.filter((x) => x.nodeId !== nodeId) };
  return { ...s, unhealthy: sick.map((x) => (x === u ? { ...u, reason: r.reason, exitCode: r.exitCode, at: now } : x)) };
}

/** Forget a node that left the job (it is checked afresh when it joins again). */
export function forgetHealth(s: JobState, nodeId: string): JobState {
  const sick = unhealthyOf(s);
  return sick.some((u) => u.nodeId === nodeId) ? { ...s, unhealthy: sick.filter((u) => u.nodeId !== nodeId) } : s;
}

/** The failing nodes still in the job, with when each is due for a recheck (ms, workflow time). */
export function rechecks(s: JobState): { nodeId: string; dueAt: number }[] {
  const joined = new Set(s.waiting.map((n) => n.nodeId));
  return unhealthyOf(s).filter((u) => joined.has(u.nodeId)).map((u) => ({ nodeId: u.nodeId, dueAt: u.at + HEALTH_RECHECK_MS }));
}

function why(s: JobState, n: NodeRecord): string | null {
  const q = s.quarantined.find((x) => x.nodeId === n.nodeId);
  if (q) return `${n.nodeId} quarantined (${q.reason})`;
  const u = unhealthyOf(s).find((x) => x.nodeId === n.nodeId);
  return u ? `${n.nodeId} failing its health check: ${JSON.stringify(u.reason)}` : null;
}

/**
 * Why the job cannot form a round with the nodes it has, when enough joined but the ones kept
 * out leave it below minNodes: `no usable node: n1 quarantined (3 failures …), n2 failing its
 * health check: "disk full"`. Null otherwise (too few joined at all is join_timeout's case).
 */
export function unusableReason(s: JobState): string | null {
  const joined = [...s.members, ...s.waiting];
  const out = joined.map((n) => why(s, n)).filter((w): w is string => w !== null);
  if (out.length === 0 || joined.length < s.spec.minNodes) return null;
  const usable = joined.length - out.length;
  if (usable >= s.spec.minNodes) return null;
  return usable === 0 ? `no usable node: ${out.join(', ')}` : `too few usable nodes (${usable} of min ${s.spec.minNodes}): ${out.join(', ')}`;
}

export const unusableTimeoutMs = (s: JobState): number => Math.min(s.spec.rdzv.unusableTimeoutMs ?? DEFAULT_UNUSABLE_TIMEOUT_MS, s.spec.rdzv.joinTimeoutMs);

/** Track since when the job has been unusable (null while it is not), at `now`. */
export function trackUnusable(s: JobState, now: number): JobState {
  const unusable = unusableReason(s) !== null;
  const since = unusable ? (s.unusableSince ?? now) : null;
  return since === (s.unusableSince ?? null) ? s : { ...s, unusableSince: since };
}

/** The verdict at `now`: the reason the job fails with, once it has been unusable for the bound. */
export function unusableVerdict(s: JobState, now: number): string | null {
  const reason = unusableReason(s);
  if (reason === null || s.unusableSince == null) return null;
  return now - s.unusableSince >= unusableTimeoutMs(s) ? `${reason} for ${unusableTimeoutMs(s) / 1000}s (unusable_timeout)` : null;
}
