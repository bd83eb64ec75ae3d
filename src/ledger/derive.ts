/**
 * Ledger records derived from the job's state, as a pure function: the job workflow compares the
 * state it last recorded (a small cursor) with the current one and appends what changed to its
 * outbox. Nothing in the job's decisions knows about the ledger. Pure: workflow code runs it.
 */
import type { Failure, JobState } from '../job/state';
import type { LedgerRecord } from './records';
import type { LedgerCursor } from './types';
import { describePreemption } from '../job/preempt';
import { describeFailure } from './format';

export type { LedgerCursor } from './types';

const KEEP = 100;
const FINAL = ['succeeded', 'failed', 'cancelled'];

type Draft = Record<string, unknown> & { kind: LedgerRecord['kind'] };

/** Records for what changed since `cursor` (null: the job was never recorded). */
export function derive(cursor: LedgerCursor | null, s: JobState, at: string): { cursor: LedgerCursor; records: LedgerRecord[] } {
  const c: LedgerCursor = cursor ?? { seq: 0, round: 0, open: false, members: [], failures: [], departures: [], checkpoint: null, ended: false, quarantined: [] };
  if (c.ended) return { cursor: c, records: [] };
  const jobId = s.spec.jobId;
  const drafts: Draft[] = [];
  if (!cursor) drafts.push({ kind: 'job', spec: s.spec as unknown as Record<string, unknown>, state: s.phase, ...(s.spec.pool ? { pool: s.spec.pool } : {}) });

  // A failure is recorded once the job settled whom to blame (lastFailure, at the next prepare):
  // when a node dies, the survivors' workers often fail first (connection reset), and the ledger
  // counts failures per node for quarantine. A job that ends before settling records the pending one.
  const ended = FINAL.includes(s.phase);
  const failure = s.lastFailure && !c.failures.includes(failureKey(s.lastFailure)) ? s.lastFailure : ended ? s.pendingFailure : null;
  const newFailure = failure && !c.failures.includes(failureKey(failure)) ? failure : null;
  const roundOver = c.open && (s.round !== c.round || s.phase !== 'running');
  let unsettled = c.unsettled;
  if (roundOver) {
    // Why the round ended is what ended it (the pending failure), until blame settles: then the
    // settled failure replaces it (below). A cursor that missed the round's end (no note between
    // it and the next prepare) finds its settled blame already there.
    const cause = s.round === c.round ? s.pendingFailure ?? newFailure : newFailure ?? s.pendingFailure;
    const reason = s.phase === 'succeeded' ? 'succeeded' : cause ? endReason(cause) : s.phase === 'cancelled' ? 'cancelled' : 'membership change';
    drafts.push({ kind: 'roundEnded', round: c.round, reason });
    unsettled = ended || (cause && cause === newFailure) ? undefined : { round: c.round, failure: cause ? failureKey(cause) : null };
  }
  // Blame settled (at the next prepare, or the job ended): a vanished node outranks the worker
  // failures it provoked (decide.ts mergeCause), so the round's end names the node, not its victim;
  // a node lost at the prepare after a membership change costs a restart, and is named too. A new
  // round opens only after blame settled, so a round still unsettled then never will be.
  if (unsettled && (newFailure || opensRound(c, s) || ended)) {
    if (newFailure && failureKey(newFailure) !== unsettled.failure) drafts.push({ kind: 'roundCause', round: unsettled.round, reason: endReason(newFailure) });
    unsettled = undefined;
  }
  if (newFailure) {
    const { nodeId, rank, exitCode, signal, message, round } = newFailure;
    drafts.push({ kind: 'failure', round, nodeId, rank, exitCode, signal, message });
  }
  // A node's health-check episode (src/job/health.ts) is a failure of that node: it counts
  // toward quarantine as a worker failure does. The job's restarts do not see it.
  const healthKeys: string[] = [];
  for (const u of s.unhealthy ?? []) {
    const key = `health:${u.round}:${u.nodeId}`;
    if (c.failures.includes(key)) continue;
    healthKeys.push(key);
    drafts.push({ kind: 'failure', round: u.round, nodeId: u.nodeId, rank: null, exitCode: u.exitCode, signal: null, message: `health check failed: ${u.reason}` });
  }
  const departures = s.departed.filter((d) => !c.departures.includes(`${d.nodeId}@${d.round}`));
  for (const d of departures) {
    const event = d.reason === 'lost' ? 'lost' : d.reason === 'drained' ? 'drain' : 'leave';
    // A checkpoint-first drain says how its checkpoint went (src/job/preempt.ts).
    const preempted = d.reason === 'drained' ? s.preemptions.find((p) => p.nodeId === d.nodeId && p.round === d.round) : undefined;
    drafts.push({ kind: 'nodeEvent', nodeId: d.nodeId, event, cause: preempted ? describePreemption(preempted) : d.reason });
  }
  const wasOut = c.quarantined;
  const nowOut = s.quarantined;
  for (const q of nowOut) if (!wasOut.includes(q.nodeId)) drafts.push({ kind: 'nodeEvent', nodeId: q.nodeId, event: 'quarantine', cause: q.reason });
  // A release is recorded for a node still in the job; one that left meanwhile just drops out.
  const present = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
  for (const nodeId of wasOut) if (!nowOut.some((q) => q.nodeId === nodeId) && present.has(nodeId)) drafts.push({ kind: 'nodeEvent', nodeId, event: 'release' });
  const checkpoint = s.checkpoint && s.checkpoint.path !== c.checkpoint ? s.checkpoint : null;
  if (checkpoint) drafts.push({ kind: 'checkpoint', path: checkpoint.path, step: checkpoint.step, chosenForRound: s.round });
  const opens = opensRound(c, s);
  if (opens) {
    for (const m of s.members) if (!c.members.includes(m.nodeId)) drafts.push({ kind: 'nodeEvent', nodeId: m.nodeId, event: 'join' });
    const members = s.members.map((m, groupRank) => ({ nodeId: m.nodeId, groupRank, address: m.address }));
    drafts.push({ kind: 'roundStarted', round: s.round, members, worldSize: s.members.reduce((n, m) => n + m.slots, 0) });
  }
  if (ended) drafts.push({ kind: 'jobEnded', state: s.phase, ...(s.verdict ? { reason: s.verdict } : {}) });

  let seq = c.seq;
  const records = drafts.map((d) => ({ ...d, jobId, seq: ++seq, at }) as LedgerRecord);
  return {
    records,
    cursor: {
      seq,
      round: opens ? s.round : c.round,
      open: opens || (c.open && !roundOver),
      members: opens ? s.members.map((m) => m.nodeId) : c.members,
      failures: newFailure || healthKeys.length ? [...c.failures, ...(newFailure ? [failureKey(newFailure)] : []), ...healthKeys].slice(-KEEP) : c.failures,
      departures: [...c.departures, ...departures.map((d) => `${d.nodeId}@${d.round}`)].slice(-KEEP),
      checkpoint: s.checkpoint?.path ?? c.checkpoint,
      ended,
      quarantined: nowOut.map((q) => q.nodeId),
      ...(unsettled ? { unsettled } : {}),
    },
  };
}

function opensRound(c: LedgerCursor, s: JobState): boolean {
  return s.phase === 'running' && (s.round !== c.round || !c.open);
}

/**
 * A round's end reason for a failure: a lost node by name (`failure: node b lost: …`), a worker
 * failure by its message. figures.ts classifyEnd reads these back.
 */
function endReason(f: Failure): string {
  if (f.rank === null && f.exitCode === null && f.signal === null && /^node lost\b/i.test(f.message ?? 'node lost')) return `failure: ${describeFailure(f)}`;
  return `failure: ${f.message ?? `node ${f.nodeId}`}`;
}

function failureKey(f: Failure): string {
  return `${f.round}:${f.nodeId}:${f.rank ?? '-'}`;
}
