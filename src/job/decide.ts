/**
 * Rendezvous and restart decisions as pure functions of the job state. The workflow applies
 * them; they are unit-tested without Temporal. None of them touches the clock or I/O: times
 * come in as arguments.
 */
import type { RoundAssignment } from './assignment';
import type { WatchTarget } from './peer-watch';
import { heartbeatIntervalMs } from './groups';
import { killedByAgent } from './kill-message';
import type { JoinRequest, ScaleRequest } from './spec';
import type { Quarantine } from './quarantine';
import { forgetHealth, isKeptOut, unhealthyOf } from './health';
import type { Departure, DepartureReason, Failure, JobState, NodeRecord } from './state';

const MAX_DEPARTURES = 50;

/** Why a join is refused, as one line naming the field; null when the node may join. */
export function validateJoin(state: JobState, req: JoinRequest): string | null {
  const { spec } = state;
  const job = `job ${spec.jobId}`;
  if (req.slots !== spec.nprocPerNode)
    return `nproc-per-node ${req.slots} does not match ${job} (${spec.nprocPerNode})`;
  const a = req.entrypoint;
  const b = spec.entrypoint;
  if (a.script !== b.script) return `script ${a.script} does not match ${job} (${b.script})`;
  if (a.module !== b.module || a.noPython !== b.noPython)
    return `launch mode (-m / --no-python) does not match ${job}`;
  if (JSON.stringify(a.args) !== JSON.stringify(b.args))
    return `script args ${JSON.stringify(a.args)} do not match ${job} (${JSON.stringify(b.args)})`;
  if (req.role !== spec.role) return `role ${req.role} does not match ${job} (${spec.role})`;
  return null;
}

/**
 * Add a joining node. A newcomer is appended to `waiting`; a node that is still a member joins
 * again only when its earlier incarnation is gone (its agent restarted), which is a lost node.
 */
export function applyJoin(state: JobState, req: JoinRequest, now: number): JobState {
  const record: NodeRecord = { nodeId: req.nodeId, address: req.address, slots: req.slots, joinedAt: now, ...(req.incarnation ? { incarnation: req.incarnation } : {}) };
  const departed = state.departed.filter((d) => d.nodeId !== req.nodeId);
  const waitingIdx = state.waiting.findIndex((n) => n.nodeId === req.nodeId);
  if (waitingIdx >= 0) {
    const waiting = state.waiting.slice();
    waiting[waitingIdx] = { ...record, joinedAt: state.waiting[waitingIdx].joinedAt };
    return { ...state, departed, waiting };
  }
  const member = state.members.find((m) => m.nodeId === req.nodeId);
  // The same run of the agent saying it again (a retried or doubled join): nothing changed.
  if (member && req.incarnation && member.incarnation === req.incarnation) return state;
  const next = { ...state, departed, waiting: [...state.waiting, record] };
  if (!member) return next;
  const lost = nodeLost(state, req.nodeId, 'its agent restarted and joined again');
  return {
    ...next,
    members: state.members.filter((m) => m.nodeId !== req.nodeId),
    pendingFailure: mergeCause(state.pendingFailure, lost),
  };
}

/**
 * A join that arrived as a signal (through a lobby): applied when valid, else recorded as
 * refused so that the node's agent can report why. A later valid join clears the refusal.
 */
export function applyJoinOrReject(state: JobState, req: JoinRequest, now: number): JobState {
  const reason = validateJoin(state, req);
  if (reason !== null) return rejectJoin(state, req.nodeId, reason);
  return { ...applyJoin(state, req, now), rejected: state.rejected.filter((r) => r.nodeId !== req.nodeId) };
}

/** Record why a node's join was refused (the latest reason per node; the newest 50 nodes). */
export function rejectJoin(state: JobState, nodeId: string, reason: string): JobState {
  const rejected = state.rejected.filter((r) => r.nodeId !== nodeId);
  return { ...state, rejected: [...rejected, { nodeId, reason }].slice(-MAX_DEPARTURES) };
}

/** Remove a node from the job for good (drained, left, or lost), remembering why. */
export function applyDeparture(state: JobState, nodeId: string, reason: DepartureReason): JobState {
  const departure: Departure = { nodeId, reason, round: state.round };
  return {
    ...forgetHealth(state, nodeId),
    members: state.members.filter((m) => m.nodeId !== nodeId),
    waiting: state.waiting.filter((m) => m.nodeId !== nodeId),
    drains: state.drains.filter((d) => d !== nodeId),
    leaving: state.leaving.filter((d) => d !== nodeId),
    departed: [...state.departed.filter((d) => d.nodeId !== nodeId), departure].slice(-MAX_DEPARTURES),
  };
}

export function validateDrain(state: JobState, nodeId: string): string | null {
  const known = [...state.members, ...state.waiting].map((n) => n.nodeId);
  if (known.includes(nodeId)) return null;
  return `node ${nodeId} is not in job ${state.spec.jobId} (nodes: ${known.join(', ') || 'none'})`;
}

/**
 * A drain (or a node's own leave) of a member waits for the round boundary; a node outside
 * the round leaves at once. Either way it is a membership change, never a failure.
 */
export function applyDrain(state: JobState, nodeId: string, reason: 'drained' | 'left' = 'drained'): JobState {
  if (validateDrain(state, nodeId) !== null) return state;
  if (!state.members.some((m) => m.nodeId === nodeId)) return applyDeparture(state, nodeId, reason);
  const leaving = reason === 'left' ? [...state.leaving.filter((l) => l !== nodeId), nodeId] : state.leaving;
  if (state.drains.includes(nodeId)) return { ...state, leaving };
  return { ...state, drains: [...state.drains, nodeId], leaving };
}

export function validateScale(state: JobState, req: ScaleRequest): string | null {
  const min = req.minNodes ?? state.spec.minNodes;
  const max = req.maxNodes ?? state.spec.maxNodes;
  if (min > max) return `minNodes ${min} exceeds maxNodes ${max}`;
  return null;
}

export function applyScale(state: JobState, req: ScaleRequest): JobState {
  if (validateScale(state, req) !== null) return state;
  const spec = { ...state.spec, minNodes: req.minNodes ?? state.spec.minNodes, maxNodes: req.maxNodes ?? state.spec.maxNodes };
  return { ...state, spec };
}

/** Nodes that could take part in the next round (quarantined ones and those failing their health check cannot). */
export function available(state: JobState): number {
  return eligible(state).length;
}

/** Members, then waiting nodes, without those kept out (src/job/health.ts isKeptOut). */
function eligible(state: JobState): NodeRecord[] {
  const out = isKeptOut(state);
  return [...state.members, ...state.waiting].filter((n) => !out(n.nodeId));
}

/** A predicate: is this node quarantined in this job? */
export function isQuarantined(state: JobState): (nodeId: string) => boolean {
  if (state.quarantined.length === 0) return () => false;
  const ids = new Set(state.quarantined.map((q) => q.nodeId));
  return (nodeId) => ids.has(nodeId);
}

/**
 * Who takes part in the next round: surviving members keep their order (the oldest is group
 * rank 0), newcomers are appended in join order up to maxNodes; the rest wait as hot spares.
 * Quarantined nodes and those failing their health check are `parked`: joined, kept out, and not
 * given back as spares.
 */
export function planRound(state: JobState): { participants: NodeRecord[]; spares: NodeRecord[]; parked: NodeRecord[] } {
  const all = eligible(state);
  const out = isKeptOut(state);
  const parked = [...state.members, ...state.waiting].filter((n) => out(n.nodeId));
  return { participants: all.slice(0, state.spec.maxNodes), spares: all.slice(state.spec.maxNodes), parked };
}

/**
 * The ledger's answer for this job's nodes: who is quarantined now. Releases take effect too (a
 * released node is eligible again, and admitted like a newcomer).
 */
export function applyQuarantine(state: JobState, quarantined: Quarantine[]): JobState {
  const before = state.quarantined;
  const same = before.length === quarantined.length && before.every((q, i) => q.nodeId === quarantined[i].nodeId && q.reason === quarantined[i].reason);
  if (same) return state;
  return { ...state, quarantined };
}

/** Apply drains and a shrunk maxNodes at a round boundary. Members beyond maxNodes become spares. */
export function settleMembership(state: JobState): JobState {
  let next = state;
  for (const nodeId of state.drains) next = applyDeparture(next, nodeId, state.leaving.includes(nodeId) ? 'left' : 'drained');
  const excess = next.members.slice(next.spec.maxNodes);
  if (excess.length === 0) return next;
  return { ...next, members: next.members.slice(0, next.spec.maxNodes), waiting: [...excess, ...next.waiting] };
}

export function assignRanks(
  state: JobState,
  participants: NodeRecord[],
  master: { addr: string; port: number },
  /** heartbeatTimeoutMs: the round's runWorkers heartbeat timeout (runHeartbeatTimeoutMs), when not heartbeat_timeout. */
  extra: { resumeFrom?: string; watch?: (WatchTarget | undefined)[]; heartbeatTimeoutMs?: number } = {},
): RoundAssignment[] {
  const worldSize = participants.reduce((s, n) => s + n.slots, 0);
  let rankOffset = 0;
  return participants.map((n, groupRank) => {
    const a: RoundAssignment = {
      jobId: state.spec.jobId,
      round: state.round,
      nodeId: n.nodeId,
      role: state.spec.role,
      groupRank,
      groupWorldSize: participants.length,
      rankOffset,
      localWorldSize: n.slots,
      worldSize,
      masterAddr: master.addr,
      masterPort: master.port,
      restartCount: state.restarts,
      maxRestarts: state.spec.maxRestarts,
      heartbeatIntervalMs: heartbeatIntervalMs(extra.heartbeatTimeoutMs ?? state.spec.rdzv.heartbeatTimeoutMs, state.spec.rdzv.groupSize),
      ...(state.spec.checkpointDir ? { checkpointDir: state.spec.checkpointDir } : {}),
      ...(state.spec.progressTimeoutMs ? { progressTimeoutMs: state.spec.progressTimeoutMs } : {}),
      ...(state.spec.progressTimeoutMs && state.spec.progressStartTimeoutMs ? { progressStartTimeoutMs: state.spec.progressStartTimeoutMs } : {}),
      ...(extra.resumeFrom ? { resumeFrom: extra.resumeFrom } : {}),
      ...(extra.watch?.[groupRank] ? { watch: extra.watch[groupRank] } : {}),
    };
    rankOffset += n.slots;
    return a;
  });
}

/**
 * Why a running round must stop now for a membership change; null to keep running.
 * Once any node finished, joiners wait: the job is ending and a new round would redo work.
 */
export function interruptReason(state: JobState, participants: string[]): string | null {
  const drained = state.drains.find((d) => participants.includes(d));
  if (drained) return `drain of ${drained}`;
  if (participants.length > state.spec.maxNodes) return `scaled to maxNodes ${state.spec.maxNodes}`;
  const out = isQuarantined(state);
  const quarantined = participants.find(out);
  if (quarantined) return `quarantine of ${quarantined}`;
  const members = new Set(state.members.map((m) => m.nodeId));
  const gone = participants.find((p) => !members.has(p)); // a Set: conditions run on every event of a 2,048-node job
  if (gone) return `${gone} restarted`;
  const keptOut = isKeptOut(state);
  const newcomer = state.waiting.find((n) => !keptOut(n.nodeId));
  if (state.finished.length === 0 && newcomer && participants.length < state.spec.maxNodes)
    return `admitting ${newcomer.nodeId}`;
  return null;
}

export function nodeLost(state: JobState, nodeId: string, why: string): Failure {
  return { nodeId, rank: null, exitCode: null, signal: null, message: `node lost: ${why}`, round: state.round };
}

/**
 * A node whose agent could not end its workers (src/agent/workers/stuck.ts): `message` is the
 * agent's line (`workers 1234 did not exit 30 s after SIGKILL (state D)`). Like a lost node it is
 * taken out of the job and blamed, so the ledger counts it toward the node's quarantine.
 */
export function nodeStuck(state: JobState, nodeId: string, message: string): Failure {
  return { nodeId, rank: null, exitCode: null, signal: null, message, round: state.round };
}

/**
 * Blame the cause, not the victims: a vanished node outranks worker failures it provoked on
 * healthy nodes (a broken collective); otherwise the first failure stays the root cause.
 */
export function mergeCause(current: Failure | null, next: Failure): Failure {
  if (current === null) return next;
  if (current.rank !== null && next.rank === null) return next;
  return current;
}

/** Account a failure episode: one restart for the whole job, however many nodes saw it. */
export function settleFailure(state: JobState): { state: JobState; exhausted: boolean } {
  if (!state.pendingFailure) return { state, exhausted: false };
  const restarts = state.restarts + 1;
  const next = { ...state, restarts, lastFailure: state.pendingFailure, pendingFailure: null };
  return { state: next, exhausted: restarts > state.spec.maxRestarts };
}

/** After a failure was settled: the job has used more restarts than it may (it fails). */
export function restartsExhausted(state: JobState): boolean {
  return state.restarts > state.spec.maxRestarts;
}

/**
 * One line naming only what a failure has: `rank 3 on node b: exit code 1: message`, `node b: node
 * lost: …`. Also for the status object's lastFailure, which has no round.
 */
export function describeFailure(f: Omit<Failure, 'round'> & { round?: number }): string {
  const where = f.rank === null ? `node ${f.nodeId}` : `rank ${f.rank} on node ${f.nodeId}`;
  // The agent sent the signal, and its message says why: `watchdog timer "x" expired after 60 s`, `no progress from …`.
  const how = killedByAgent(f.message) ? '' : f.signal ? `killed by ${f.signal}` : f.exitCode !== null ? `exit code ${f.exitCode}` : '';
  return [where, how, f.message].filter(Boolean).join(': ');
}

export function joinTimeoutReason(state: JobState): string {
  const s = state.spec;
  const kept = [...state.quarantined.map((q) => `${q.nodeId} quarantined`), ...unhealthyOf(state).map((u) => `${u.nodeId} failing its health check`)];
  const out = kept.length ? ` (${kept.join(', ')})` : '';
  return `rendezvous timed out: ${available(state)} of min ${s.minNodes} nodes joined within join_timeout ${s.rdzv.joinTimeoutMs / 1000}s${out}`;
}

/**
 * Signals one run of a job takes before it continues as new at the next round boundary: a fifth
 * of Temporal's default `history.maximumSignalsPerExecution` (10,000), so that lobby batches,
 * group reports and operators' signals never hit that limit between two round boundaries.
 */
export const SIGNALS_PER_RUN = 2000;

/**
 * Continue-as-new at a round boundary: when Temporal suggests it (history near its limits),
 * after SIGNALS_PER_RUN signals in this run, or every N rounds if the spec says so.
 */
export function shouldContinueAsNew(state: JobState, roundAtRunStart: number, suggested: boolean, signalsThisRun = 0): boolean {
  const every = state.spec.continueAsNewEveryRounds;
  return suggested || signalsThisRun >= SIGNALS_PER_RUN || (every !== undefined && state.round - roundAtRunStart >= every);
}

/**
 * Continue-as-new while the job gathers nodes (no round runs): when Temporal suggests it, or
 * after SIGNALS_PER_RUN signals. A run that waits long below min (or through a last call) takes
 * every lobby batch meanwhile; past the server's signal limit it could take no more joins, and
 * would wait for ever for the nodes it refused. A run that took no signal has not grown by
 * waiting: continuing it would not shorten its history (a state so large that Temporal suggests
 * it at once would continue as new for ever).
 */
export function shouldContinueAsNewGathering(suggested: boolean, signalsThisRun: number): boolean {
  return signalsThisRun > 0 && (suggested || signalsThisRun >= SIGNALS_PER_RUN);
}
