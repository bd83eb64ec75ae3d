/**
 * One rendezvous round: `prepare` on every participant, then `runWorkers` on all of them until
 * they finish, one fails or vanishes, or the membership must change.
 */
import * as wf from '@temporalio/workflow';
import { ActivityCancellationType, ActivityFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import * as d from '../src/job/decide';
import type { Failure, JobState, NodeRecord } from '../src/job/state';
import { findResumePoint } from './checkpoint';
import { publish } from './publish';

export interface PreparedRound {
  participants: NodeRecord[];
  master: { addr: string; port: number };
}

type Outcome = { kind: 'succeeded' } | { kind: 'failed'; failure: Failure } | { kind: 'lost'; why: string } | { kind: 'stopped' };

type Get = () => JobState;
type Set = (s: JobState) => void;

/**
 * Node activities are pinned to the node's own queue: they start processes on that machine.
 * One attempt only: a retry after a timeout would go back to the same (dead) node; the
 * workflow decides what a lost node means instead.
 */
function onNode(s: JobState, nodeId: string, summary: string, long: boolean): NodeActivities {
  const { rdzv, shutdownTimeoutMs } = s.spec;
  return wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: rdzv.prepareTimeoutMs,
    startToCloseTimeout: long ? '3650 days' : shutdownTimeoutMs + 60_000,
    heartbeatTimeout: rdzv.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    summary,
  });
}

function classify(err: unknown, s: JobState): Outcome {
  if (isCancellation(err)) return { kind: 'stopped' };
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) {
    const t = cause.timeoutType;
    return t === 'HEARTBEAT'
      ? { kind: 'lost', why: `no heartbeat within ${s.spec.rdzv.heartbeatTimeoutMs / 1000}s` }
      : { kind: 'lost', why: `did not answer within ${s.spec.rdzv.prepareTimeoutMs / 1000}s` };
  }
  return { kind: 'lost', why: cause instanceof Error ? cause.message : String(cause) };
}

/** Returns null when the round must form again (too few nodes, or one did not answer). */
export async function prepareRound(get: Get, set: Set): Promise<PreparedRound | null> {
  const plan = d.planRound(get());
  if (plan.participants.length < get().spec.minNodes) return null;
  const round = get().round + 1;
  set({ ...get(), round, phase: 'rendezvous' });
  publish(get());
  const results = await Promise.all(
    plan.participants.map((p) =>
      onNode(get(), p.nodeId, `round ${round}: prepare ${p.nodeId}`, false)
        .prepare({ jobId: get().spec.jobId, round, nodeId: p.nodeId })
        .then((r) => ({ ok: true as const, port: r.port }), (e: unknown) => ({ ok: false as const, outcome: classify(e, get()) })),
    ),
  );
  let s = get();
  let lost = false;
  results.forEach((r, i) => {
    if (r.ok) return;
    const nodeId = plan.participants[i].nodeId;
    const wasMember = s.members.some((m) => m.nodeId === nodeId);
    s = d.applyDeparture(s, nodeId, 'lost');
    const why = r.outcome.kind === 'lost' ? r.outcome.why : 'did not answer prepare';
    if (wasMember) s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, nodeId, why)) };
    lost = true;
  });
  if (lost) {
    set(s);
    return null;
  }
  const ids = plan.participants.map((p) => p.nodeId);
  const everyone = [...s.members, ...s.waiting];
  const members = ids.map((id) => everyone.find((n) => n.nodeId === id)).filter((n): n is NodeRecord => !!n);
  set({ ...s, members, waiting: everyone.filter((n) => !ids.includes(n.nodeId)), finished: [] });
  const first = results[0];
  return { participants: members, master: { addr: members[0].address, port: first.ok ? first.port : 0 } };
}

/** Run the round; 'succeeded' when every node's workers exited 0, else 'restart'. */
export async function runRound(get: Get, set: Set, prepared: PreparedRound): Promise<'succeeded' | 'restart'> {
  const found = await findResumePoint(get(), prepared.participants[0].nodeId);
  set(found.state);
  const s0 = get();
  const assignments = d.assignRanks(s0, prepared.participants, prepared.master, { resumeFrom: found.resumeFrom });
  const ids = assignments.map((a) => a.nodeId);
  const round = s0.round;
  set({ ...s0, phase: 'running' });
  publish(get());
  const outcomes = new Map<string, Outcome>();
  const scope = new wf.CancellationScope();
  for (const a of assignments) {
    const summary = `round ${round}: run ranks ${a.rankOffset}-${a.rankOffset + a.localWorldSize - 1} on ${a.nodeId} (group rank ${a.groupRank}/${a.groupWorldSize})`;
    const act = onNode(s0, a.nodeId, summary, true);
    scope
      .run(() => act.runWorkers(a))
      .then(
        (r) => {
          if (r.state === 'succeeded') {
            outcomes.set(a.nodeId, { kind: 'succeeded' });
            if (get().round === round) set({ ...get(), finished: [...get().finished, a.nodeId] });
            return;
          }
          const f = r.failure;
          const failure: Failure = { nodeId: a.nodeId, rank: f.rank, exitCode: f.exitCode, signal: f.signal, message: f.message, round };
          outcomes.set(a.nodeId, { kind: 'failed', failure });
        },
        (e: unknown) => outcomes.set(a.nodeId, classify(e, get())),
      );
  }
  const bad = () => [...outcomes.values()].some((o) => o.kind !== 'succeeded');
  await wf.condition(() => outcomes.size === ids.length || bad() || d.interruptReason(get(), ids) !== null);
  if (!bad() && outcomes.size === ids.length) return 'succeeded';

  set({ ...get(), phase: 'restarting' });
  scope.cancel();
  let s = get();
  for (const [nodeId, o] of outcomes) {
    if (o.kind === 'failed') s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, o.failure) };
    if (o.kind === 'lost') {
      s = d.applyDeparture(s, nodeId, 'lost');
      s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, nodeId, o.why)) };
    }
  }
  set({ ...s, finished: [] });
  publish(get());
  return 'restart';
}
