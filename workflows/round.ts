/**
 * One rendezvous round: `prepare` on every participant, then `runWorkers` on all of them until
 * they finish, one fails or vanishes, or the membership must change. A round of more than
 * `group_size` nodes runs the node activities in group workflows (workflows/group.ts) of at most
 * `group_size` nodes; a round of one group runs the same code in the job itself. Either way no
 * execution has more than `group_size` node activities pending.
 */
import * as wf from '@temporalio/workflow';
import { ChildWorkflowCancellationType, ParentClosePolicy } from '@temporalio/workflow';
import * as d from '../src/job/decide';
import { GROUP_TASK_TIMEOUT, groupWorkflowId, heartbeatIntervalMs, partition } from '../src/job/groups';
import type { JobState, NodeRecord } from '../src/job/state';
import type { Launch } from '../src/job/assignment';
import { findResumePoint } from './checkpoint';
import { prepareGroup, prepareNodes, runGroup, runNodes, type GroupTiming, type NodeOutcome, type PrepareAnswer } from './group';
import { publish } from './publish';

export interface PreparedRound {
  participants: NodeRecord[];
  master: { addr: string; port: number };
}

type Get = () => JobState;
type Set = (s: JobState) => void;

function timing(s: JobState): GroupTiming {
  const { heartbeatTimeoutMs, prepareTimeoutMs } = s.spec.rdzv;
  return { heartbeatTimeoutMs, prepareTimeoutMs, shutdownTimeoutMs: s.spec.shutdownTimeoutMs };
}

/**
 * Options of a group child. TRY_CANCEL: the job goes on at once when it stops a round (the
 * next `prepare` stops stale workers anyway); REQUEST_CANCEL: a job that ends or continues as
 * new cancels its groups rather than leaving them to run.
 */
function groupOptions(s: JobState, round: number, phase: 'prepare' | 'run', index: number, summary: string) {
  return {
    workflowId: groupWorkflowId(s.spec.jobId, round, phase, index),
    cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    workflowTaskTimeout: GROUP_TASK_TIMEOUT,
    staticSummary: summary,
  };
}

/** What a pool job's nodes run (absent for `telastic run` jobs, whose agents bring the command). */
function launchOf(s: JobState): { launch: Launch } | object {
  if (!s.spec.pool) return {};
  const { entrypoint, env, checkpointDir } = s.spec;
  return { launch: { entrypoint, env: env ?? {}, ...(checkpointDir ? { checkpointDir } : {}) } };
}

/**
 * Returns null when the round must form again (too few nodes, or one did not answer), and
 * `refused` when a pool agent will not run the job's command (the job cannot run as submitted).
 */
export async function prepareRound(get: Get, set: Set): Promise<PreparedRound | null | { refused: string }> {
  const plan = d.planRound(get());
  if (plan.participants.length < get().spec.minNodes) return null;
  const round = get().round + 1;
  set({ ...get(), round, phase: 'rendezvous' });
  publish(get());
  const s0 = get();
  const groups = partition(plan.participants.map((p) => p.nodeId), s0.spec.rdzv.groupSize);
  const input = (nodeIds: string[]) => ({ jobId: s0.spec.jobId, round, nodeIds, timing: timing(s0), ...launchOf(s0) });
  // One group: the job runs it itself (as small jobs always did): no child workflow to land on a
  // frozen coordinator while the job recovers. Several: one child workflow each.
  const answers: PrepareAnswer[] =
    groups.length === 1
      ? await prepareNodes(input(groups[0]))
      : (
          await Promise.all(
            groups.map((nodeIds, i) =>
              wf.executeChild(prepareGroup, {
                ...groupOptions(s0, round, 'prepare', i, `round ${round}: prepare ${nodeIds.length} node(s): ${nodeIds[0]}…`),
                args: [input(nodeIds)],
              }),
            ),
          )
        ).flat();
  const refused = answers.find((a) => !a.ok && a.refused);
  if (refused && !refused.ok) return { refused: refused.why };
  let s = get();
  let lost = false;
  for (const a of answers) {
    if (a.ok) continue;
    const wasMember = s.members.some((m) => m.nodeId === a.nodeId);
    s = d.applyDeparture(s, a.nodeId, 'lost');
    if (wasMember) s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, a.nodeId, a.why)) };
    lost = true;
  }
  if (lost) {
    set(s);
    return null;
  }
  const ids = new Set(plan.participants.map((p) => p.nodeId));
  const everyone = new Map([...s.members, ...s.waiting].map((n) => [n.nodeId, n]));
  const members = [...ids].map((id) => everyone.get(id)).filter((n): n is NodeRecord => !!n);
  set({ ...s, members, waiting: [...everyone.values()].filter((n) => !ids.has(n.nodeId)), finished: [] });
  const first = answers[0];
  return { participants: members, master: { addr: members[0].address, port: first.ok ? first.port : 0 } };
}

/** Run the round; 'succeeded' when every node's workers exited 0, else 'restart'. */
export async function runRound(get: Get, set: Set, prepared: PreparedRound): Promise<'succeeded' | 'restart'> {
  const found = await findResumePoint(get(), prepared.participants[0].nodeId);
  set(found.state);
  const s0 = get();
  const { groupSize, heartbeatTimeoutMs } = s0.spec.rdzv;
  const heartbeat = heartbeatIntervalMs(heartbeatTimeoutMs, groupSize);
  const assignments = d.assignRanks(s0, prepared.participants, prepared.master, { resumeFrom: found.resumeFrom }).map((a) => ({ ...a, heartbeatIntervalMs: heartbeat, ...launchOf(s0) }));
  const ids = assignments.map((a) => a.nodeId);
  const round = s0.round;
  set({ ...s0, phase: 'running' });
  publish(get());
  const outcomes = new Map<string, NodeOutcome>();
  const groups = partition(assignments, groupSize);
  let done = 0;
  const finished = (nodeIds: string[]) => {
    if (get().round === round) set({ ...get(), finished: [...new Set([...get().finished, ...nodeIds])] });
  };
  const scope = new wf.CancellationScope();
  groups.forEach((group, i) => {
    const first = group[0];
    const last = group[group.length - 1];
    const summary = `round ${round}: run group ranks ${first.groupRank}-${last.groupRank} (${group.length} node(s))`;
    const input = { round, assignments: group, timing: timing(s0) };
    scope
      .run(() => (groups.length === 1 ? runNodes(input, finished) : wf.executeChild(runGroup, { ...groupOptions(s0, round, 'run', i, summary), args: [input] })))
      .then(
        (results) => {
          for (const o of results) outcomes.set(o.nodeId, o);
          finished(results.filter((o) => o.kind === 'succeeded').map((o) => o.nodeId));
        },
        // The group workflow itself failed or was cancelled: its nodes are stopped, no one is blamed.
        () => group.forEach((a) => outcomes.has(a.nodeId) || outcomes.set(a.nodeId, { nodeId: a.nodeId, kind: 'stopped' })),
      )
      .finally(() => done++);
  });
  const bad = () => [...outcomes.values()].some((o) => o.kind !== 'succeeded');
  await wf.condition(() => done === groups.length || bad() || d.interruptReason(get(), ids) !== null);
  if (!bad() && outcomes.size === ids.length) return 'succeeded';

  set({ ...get(), phase: 'restarting' });
  scope.cancel();
  let s = get();
  for (const o of outcomes.values()) {
    if (o.kind === 'failed') s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, o.failure) };
    if (o.kind === 'lost') {
      s = d.applyDeparture(s, o.nodeId, 'lost');
      s = { ...s, pendingFailure: d.mergeCause(s.pendingFailure, d.nodeLost(s, o.nodeId, o.why)) };
    }
  }
  set({ ...s, finished: [] });
  publish(get());
  return 'restart';
}
