/**
 * Every change to a job's state is one of these events, applied by `reduce`: a handler's message,
 * a round's step, an activity's answer, a side loop's progress. The workflow (workflows/job-run.ts)
 * holds the one state and applies events to whatever the state is when the event happens, so an
 * event never overwrites what another changed meanwhile: no helper carries a state across an
 * `await`. Pure: times come in the events.
 */
import * as d from './decide';
import { requestCheckpointFirst, finishPreempt, DEFAULT_DRAIN_GRACE_MS } from './preempt';
import { applyGrant, dropSpares } from './pool-link';
import { nextStall } from './progress';
import type { GrantedNode } from '../pool/state';
import { describeZodError, drainRequestSchema, joinRequestSchema, leaveRequestSchema, scaleRequestSchema, type DrainRequest } from './spec';
import type { Checkpoint, JobState, NodeOutcome, NodeRecord, Preempt } from './state';
import { FINAL_PHASES } from './state';
import type { JoinRequest, LeaveRequest } from './spec';
import type { LedgerCursor } from '../ledger/types';
import type { LedgerRecord } from '../ledger/records';
import type { Quarantine } from './quarantine';
import { healthChecked, markUnhealthy, trackUnusable, type Unhealthy } from './health';

/**
 * A join or leave entering a job through one of its lobbies (workflows/lobby.ts). It comes as a
 * signal, so it is validated here, where it is applied: a join that does not parse is refused.
 */
export type LobbyEvent = { kind: 'join'; req: JoinRequest } | { kind: 'leave'; req: LeaveRequest };

/** A participant that did not answer `prepare`, and why; `stuck`: its agent could not end its last round's workers. */
export interface Unanswered {
  nodeId: string;
  why: string;
  stuck?: boolean;
}

export type JobEvent =
  // Messages (handlers apply them as they arrive; a message that does not parse changes nothing).
  | { type: 'lobby'; events: LobbyEvent[]; now: number }
  | { type: 'drain'; req: unknown; now: number }
  | { type: 'scale'; req: unknown }
  | { type: 'groupFinished'; round: number; nodeIds: string[] }
  | { type: 'granted'; nodes: GrantedNode[]; now: number }
  // The round, in order.
  | { type: 'boundary' }
  | { type: 'waiting'; now: number }
  | { type: 'gathered' }
  | { type: 'roundOpened' }
  | { type: 'prepared'; participants: string[]; unanswered: Unanswered[] }
  // Participants whose agent's health check failed in `prepare`: kept out; the round forms again.
  | { type: 'healthFailed'; failed: Omit<Unhealthy, 'round' | 'at'>[]; now: number }
  | { type: 'failureSettled' }
  | { type: 'checkpointFound'; checkpoint: Checkpoint | null; resumeFrom?: string }
  | { type: 'running' }
  | { type: 'roundEnded'; outcomes: NodeOutcome[] }
  | { type: 'ended'; phase: 'succeeded' | 'failed' | 'cancelled'; verdict?: string }
  // Side loops.
  | { type: 'poolTold'; released: string[] }
  | { type: 'quarantine'; quarantined: Quarantine[] }
  | { type: 'healthChecked'; nodeId: string; result: { ok: true } | { ok: false; reason: string; exitCode: number | null }; now: number }
  | { type: 'ledgerOpened' }
  | { type: 'ledgerNoted'; cursor: LedgerCursor; records: LedgerRecord[] }
  | { type: 'ledgerSent'; lastSeq: number }
  | { type: 'preemptEnded'; preempt: Preempt; checkpoint: Checkpoint | null; now: number; note?: string };

/** The job's state after `e`. Never throws: what cannot apply is ignored (and validators refuse it first). */
export function reduce(s: JobState, e: JobEvent): JobState {
  switch (e.type) {
    case 'lobby':
      return e.events.reduce((next, ev) => lobbyEvent(next, ev, e.now), s);
    case 'drain': {
      const r = drainRequestSchema.safeParse(e.req);
      return r.success ? drain(s, r.data, e.now) : s;
    }
    case 'scale': {
      const r = scaleRequestSchema.safeParse(e.req);
      return r.success ? d.applyScale(s, r.data) : s;
    }
    case 'groupFinished':
      return e.round === s.round ? { ...s, finished: [...new Set([...s.finished, ...e.nodeIds])] } : s;
    case 'granted':
      return FINAL_PHASES.includes(s.phase) ? s : applyGrant(s, e.nodes, e.now);
    case 'boundary':
      // Drains and a shrunk maxNodes apply before the round forms; pool jobs keep no spares.
      return s.spec.pool ? dropSpares(d.settleMembership(s)) : d.settleMembership(s);
    case 'waiting':
      return trackUnusable({ ...s, phase: 'waiting', belowMinSince: s.belowMinSince ?? e.now }, e.now);
    case 'gathered':
      return { ...s, phase: 'rendezvous', belowMinSince: null, unusableSince: null };
    case 'roundOpened':
      return { ...s, round: s.round + 1, phase: 'rendezvous' };
    case 'prepared':
      return prepared(s, e.participants, e.unanswered);
    case 'healthFailed':
      return keepOutUnhealthy(s, e.failed, e.now);
    case 'failureSettled':
      return d.settleFailure(s).state;
    case 'checkpointFound': {
      const stall = s.spec.checkpointDir ? nextStall(s, e.resumeFrom ?? null) : s.stall;
      return { ...s, stall, ...(e.checkpoint ? { checkpoint: e.checkpoint } : {}) };
    }
    case 'running':
      return { ...s, phase: 'running' };
    case 'roundEnded':
      return roundEnded(s, e.outcomes);
    case 'ended':
      return { ...s, phase: e.phase, ...(e.verdict ? { verdict: e.verdict } : {}) };
    case 'poolTold': {
      // A node granted again while the signal was in flight is held again: it stays.
      const gone = new Set(e.released);
      const holding = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
      return { ...s, poolNodes: s.poolNodes.filter((n) => !gone.has(n) || holding.has(n)) };
    }
    case 'quarantine':
      return d.applyQuarantine(s, e.quarantined);
    case 'healthChecked':
      return healthChecked(s, e.nodeId, e.result, e.now);
    case 'ledgerOpened':
      return s.ledger ? s : { ...s, ledger: { cursor: null, outbox: [] } };
    case 'ledgerNoted':
      return s.ledger ? { ...s, ledger: { cursor: e.cursor, outbox: [...s.ledger.outbox, ...e.records] } } : s;
    case 'ledgerSent':
      return s.ledger ? { ...s, ledger: { ...s.ledger, outbox: s.ledger.outbox.filter((r) => r.seq > e.lastSeq) } } : s;
    case 'preemptEnded':
      if (!s.preempts.some((p) => p.nodeId === e.preempt.nodeId)) return s;
      return finishPreempt(s, e.preempt, { checkpoint: e.checkpoint, now: e.now, note: e.note });
  }
}

/** A drain: checkpoint-first when asked (src/job/preempt.ts), else at the round boundary. */
function drain(s: JobState, req: DrainRequest, now: number): JobState {
  if (req.checkpointFirst) return requestCheckpointFirst(s, req.nodeId, req.graceMs ?? DEFAULT_DRAIN_GRACE_MS, now);
  return d.applyDrain(s, req.nodeId);
}

/** A join or leave forwarded by a lobby; a join that does not parse is refused like a mismatch. */
function lobbyEvent(s: JobState, e: LobbyEvent, now: number): JobState {
  if (e.kind === 'leave') {
    const r = leaveRequestSchema.safeParse(e.req);
    return r.success ? d.applyDrain(s, r.data.nodeId, 'left') : s;
  }
  const r = joinRequestSchema.safeParse(e.req);
  if (r.success) return d.applyJoinOrReject(s, r.data, now);
  const nodeId = (e.req as { nodeId?: unknown } | null | undefined)?.nodeId;
  return typeof nodeId === 'string' ? d.rejectJoin(s, nodeId, describeZodError(r.error, 'join: ')) : s;
}

/**
 * Every participant answered `prepare`: they are the round's members, in the order planned, and
 * everyone else waits. One did not: it is dropped as lost (a member's loss is a failure to blame)
 * and the round forms again without it.
 */
function prepared(s: JobState, participants: string[], unanswered: Unanswered[]): JobState {
  if (unanswered.length > 0) {
    return unanswered.reduce((next, u) => {
      const wasMember = next.members.some((m) => m.nodeId === u.nodeId);
      const gone = d.applyDeparture(next, u.nodeId, 'lost');
      // Stuck workers are the node's fault wherever it stood: blamed even as a newcomer.
      if (u.stuck) return { ...gone, pendingFailure: d.mergeCause(gone.pendingFailure, d.nodeStuck(gone, u.nodeId, u.why)) };
      return wasMember ? { ...gone, pendingFailure: d.mergeCause(gone.pendingFailure, d.nodeLost(gone, u.nodeId, u.why)) } : gone;
    }, s);
  }
  // A participant drained or gone while prepare ran is not a member (the next boundary re-plans).
  const everyone = new Map([...s.members, ...s.waiting].map((n) => [n.nodeId, n]));
  const ids = new Set(participants);
  const members = participants.map((id) => everyone.get(id)).filter((n): n is NodeRecord => !!n);
  return { ...s, members, waiting: [...everyone.values()].filter((n) => !ids.has(n.nodeId)), finished: [] };
}

/**
 * Nodes whose health check failed: kept out (src/job/health.ts) and, if members, moved to the
 * front of `waiting`, to be admitted like newcomers once a recheck passes. A membership change,
 * never a failure of the job: it costs no restart (it counts toward the node's quarantine).
 */
function keepOutUnhealthy(s: JobState, failed: Omit<Unhealthy, 'round' | 'at'>[], now: number): JobState {
  const joined = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
  const known = failed.filter((f) => joined.has(f.nodeId));
  if (known.length === 0) return s;
  const ids = new Set(known.map((f) => f.nodeId));
  const out = s.members.filter((m) => ids.has(m.nodeId));
  return markUnhealthy({ ...s, members: s.members.filter((m) => !ids.has(m.nodeId)), waiting: [...out, ...s.waiting] }, known, now);
}

/** The round stopped short of success: blame what failed, vanished or is stuck, and restart; a stuck node is taken out. */
function roundEnded(s: JobState, outcomes: NodeOutcome[]): JobState {
  let next: JobState = { ...s, phase: 'restarting', finished: [] };
  for (const o of outcomes) {
    if (o.kind === 'failed') next = { ...next, pendingFailure: d.mergeCause(next.pendingFailure, o.failure) };
    if (o.kind === 'lost') {
      next = d.applyDeparture(next, o.nodeId, 'lost');
      next = { ...next, pendingFailure: d.mergeCause(next.pendingFailure, d.nodeLost(next, o.nodeId, o.why)) };
    }
    if (o.kind === 'stuck') {
      next = d.applyDeparture(next, o.nodeId, 'lost');
      next = { ...next, pendingFailure: d.mergeCause(next.pendingFailure, d.nodeStuck(next, o.nodeId, o.message)) };
    }
  }
  return next;
}
