/**
 * Ledger records derived from the job's state, as a pure function: the job workflow compares the
 * state it last recorded (a small cursor) with the current one and appends what changed to its
 * outbox. Nothing in the job's decisions knows about the ledger. Pure: workflow code runs it.
 */
import type { Failure, JobState } from '../job/state';
import type { LedgerRecord } from './records';
import { describePreemption } from '../job/preempt';

export interface LedgerCursor {
  /** The last seq used; records are numbered from 1. */
  seq: number;
  /** The last round recorded as started, and whether it is still open. */
  round: number;
  open: boolean;
  members: string[];
  /** Failures and departures already recorded (keys), and the last checkpoint. */
  failures: string[];
  departures: string[];
  checkpoint: string | null;
  ended: boolean;
  /** Nodes recorded as quarantined in this job (absent in cursors from before quarantine). */
  quarantined?: string[];
}

const KEEP = 100;
const FINAL = ['succeeded', 'failed', 'cancelled'];

type Draft = Record<string, unknown> & { kind: LedgerRecord['kind'] };

/** Records for what changed since `cursor` (null: the job was never recorded). */
export function derive(cursor: LedgerCursor | null, s: JobState, at: string): { cursor: LedgerCursor; records: LedgerRecord[] } {
  const c: LedgerCursor = cursor ?? { seq: 0, round: 0, open: false, members: [], failures: [], departures: [], checkpoint: null, ended: false };
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
  if (roundOver) {
    // Why the round ended is what ended it, blame settled or not.
    const cause = s.pendingFailure ?? newFailure;
    const reason = s.phase === 'succeeded' ? 'succeeded' : cause ? `failure: ${cause.message ?? `node ${cause.nodeId}`}` : s.cancelRequested ? 'cancelled' : 'membership change';
    drafts.push({ kind: 'roundEnded', round: c.round, reason });
  }
  if (newFailure) {
    const { nodeId, rank, exitCode, signal, message, round } = newFailure;
    drafts.push({ kind: 'failure', round, nodeId, rank, exitCode, signal, message });
  }
  const departures = s.departed.filter((d) => !c.departures.includes(`${d.nodeId}@${d.round}`));
  for (const d of departures) {
    const event = d.reason === 'lost' ? 'lost' : d.reason === 'drained' ? 'drain' : 'leave';
    // A checkpoint-first drain says how its checkpoint went (src/job/preempt.ts).
    const preempted = d.reason === 'drained' ? s.preemptions?.find((p) => p.nodeId === d.nodeId && p.round === d.round) : undefined;
    drafts.push({ kind: 'nodeEvent', nodeId: d.nodeId, event, cause: preempted ? describePreemption(preempted) : d.reason });
  }
  const wasOut = c.quarantined ?? [];
  const nowOut = s.quarantined ?? [];
  for (const q of nowOut) if (!wasOut.includes(q.nodeId)) drafts.push({ kind: 'nodeEvent', nodeId: q.nodeId, event: 'quarantine', cause: q.reason });
  // A release is recorded for a node still in the job; one that left meanwhile just drops out.
  const present = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
  for (const nodeId of wasOut) if (!nowOut.some((q) => q.nodeId === nodeId) && present.has(nodeId)) drafts.push({ kind: 'nodeEvent', nodeId, event: 'release' });
  const checkpoint = s.checkpoint && s.checkpoint.path !== c.checkpoint ? s.checkpoint : null;
  if (checkpoint) drafts.push({ kind: 'checkpoint', path: checkpoint.path, step: checkpoint.step, chosenForRound: s.round });
  const opens = s.phase === 'running' && (s.round !== c.round || !c.open);
  if (opens) {
    for (const m of s.members) if (!c.members.includes(m.nodeId)) drafts.push({ kind: 'nodeEvent', nodeId: m.nodeId, event: 'join' });
    const members = s.members.map((m, groupRank) => ({ nodeId: m.nodeId, groupRank, address: m.address }));
    drafts.push({ kind: 'roundStarted', round: s.round, members, worldSize: s.members.reduce((n, m) => n + m.slots, 0) });
  }
  if (ended) drafts.push({ kind: 'jobEnded', state: s.phase });

  let seq = c.seq;
  const records = drafts.map((d) => ({ ...d, jobId, seq: ++seq, at }) as LedgerRecord);
  return {
    records,
    cursor: {
      seq,
      round: opens ? s.round : c.round,
      open: opens || (c.open && !roundOver),
      members: opens ? s.members.map((m) => m.nodeId) : c.members,
      failures: newFailure ? [...c.failures, failureKey(newFailure)].slice(-KEEP) : c.failures,
      departures: [...c.departures, ...departures.map((d) => `${d.nodeId}@${d.round}`)].slice(-KEEP),
      checkpoint: s.checkpoint?.path ?? c.checkpoint,
      ended,
      ...(nowOut.length || wasOut.length ? { quarantined: nowOut.map((q) => q.nodeId) } : {}),
    },
  };
}

function failureKey(f: Failure): string {
  return `${f.round}:${f.nodeId}:${f.rank ?? '-'}`;
}
