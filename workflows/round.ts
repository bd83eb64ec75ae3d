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
import { GROUP_TASK_TIMEOUT, groupWorkflowId, newcomerPrepareTimeoutMs, partition } from '../src/job/groups';
import type { JobState, NodeOutcome, NodeRecord } from '../src/job/state';
import type { Launch } from '../src/job/assignment';
import { findResumePoint, pruneOld } from './checkpoint';
import { prepareGroup, prepareNodes, runGroup, runNodes, type GroupTiming, type PrepareAnswer } from './group';
import type { JobRun } from './job-run';
import { targetChanged, untilDoneOrMove, type Adoption } from './upgrade';
import { upgradeMove } from '../src/job/upgrade';
import { noProgressVerdict } from '../src/job/progress';
import { watchTargets } from '../src/job/peer-watch';

export interface PreparedRound {
  participants: NodeRecord[];
  master: { addr: string; port: number };
  /** Each participant's peer watch port (src/job/peer-watch.ts), when its agent gave one. */
  watchPorts?: Record<string, number>;
}

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
function launchOf(s: JobState): { launch?: Launch } {
  if (!s.spec.pool) return {};
  const { entrypoint, env, checkpointDir } = s.spec;
  return { launch: { entrypoint, env: env ?? {}, ...(checkpointDir ? { checkpointDir } : {}) } };
}

/**
 * Returns null when the round must form again (too few nodes, or one did not answer), and
 * `refused` when a pool agent will not run the job's command (the job cannot run as submitted).
 */
export async function prepareRound(run: JobRun): Promise<PreparedRound | null | { refused: string }> {
  const plan = d.planRound(run.state);
  if (plan.participants.length < run.state.spec.minNodes) return null;
  const known = new Set(run.state.members.map((m) => m.nodeId));
  const newcomers = new Set(plan.participants.filter((p) => !known.has(p.nodeId)).map((p) => p.nodeId));
  const s = run.apply({ type: 'roundOpened' });
  run.publish();
  const { round, spec } = s;
  const groups = partition(plan.participants.map((p) => p.nodeId), spec.rdzv.groupSize);
  const t = { ...timing(s), newcomerPrepareTimeoutMs: newcomerPrepareTimeoutMs(spec.rdzv.prepareTimeoutMs, newcomers.size) };
  const input = (nodeIds: string[]) => {
    const fresh = nodeIds.filter((id) => newcomers.has(id));
    return { jobId: spec.jobId, round, nodeIds, timing: t, ...(fresh.length ? { newcomers: fresh } : {}), ...launchOf(s), ...(spec.checkpointDir ? { checkpointDir: spec.checkpointDir } : {}) };
  };
  // One group: the job runs it itself: no child workflow to land on a frozen coordinator while
  // the job recovers. Several: one child workflow each.
  const answers: PrepareAnswer[] =
    groups.length === 1
      ? await prepareNodes(input(groups[0]))
      : (
          await Promise.all(
            groups.map((nodeIds, i) =>
              wf.executeChild(prepareGroup, {
                ...groupOptions(s, round, 'prepare', i, `round ${round}: prepare ${nodeIds.length} node(s): ${nodeIds[0]}…`),
                args: [input(nodeIds)],
              }),
            ),
          )
        ).flat();
  const refused = answers.find((a) => !a.ok && a.refused);
  if (refused && !refused.ok) return { refused: refused.why };
  // A node failing its health check is kept out (src/job/health.ts); the round forms again without it.
  const failed = answers.flatMap((a) => (!a.ok && a.unhealthy ? [{ nodeId: a.nodeId, reason: a.why, exitCode: a.unhealthy.exitCode }] : []));
  if (failed.length > 0) run.apply({ type: 'healthFailed', failed, now: Date.now() });
  const unanswered = answers.flatMap((a) => (a.ok || a.unhealthy ? [] : [{ nodeId: a.nodeId, why: a.why, ...(a.stuck ? { stuck: true } : {}) }]));
  if (failed.length > 0 && unanswered.length === 0) {
    run.publish();
    return null;
  }
  const { members } = run.apply({ type: 'prepared', participants: plan.participants.map((p) => p.nodeId), unanswered });
  // Every participant may have been drained (or left) while prepare ran: form again.
  if (unanswered.length > 0 || members.length < run.state.spec.minNodes) return null;
  const first = answers[0];
  const watchPorts = Object.fromEntries(answers.flatMap((a) => (a.ok && a.watchPort !== undefined ? [[a.nodeId, a.watchPort]] : [])));
  return { participants: members, master: { addr: members[0].address, port: first.ok ? first.port : 0 }, watchPorts };
}

/**
 * 'succeeded' when every node's workers exited 0, 'restart' when the round must form again, an
 * adoption when the job moves to another run (a newer build, docs/upgrading.md) that takes the
 * running round along, a no-progress verdict when the round would resume where too many failed
 * rounds in a row did.
 */
export type RoundOutcome = 'succeeded' | 'restart' | { adopt: Adoption } | { noProgress: string };

/** Run the round: find its checkpoint, assign ranks, run every node's workers. */
export async function runRound(run: JobRun, prepared: PreparedRound): Promise<RoundOutcome> {
  const lookup = await findResumePoint(run.state, prepared.participants[0].nodeId);
  const s = run.apply({ type: 'checkpointFound', checkpoint: lookup.found, ...(lookup.resumeFrom ? { resumeFrom: lookup.resumeFrom } : {}) });
  // Resuming from where the last failed rounds did, once more than the job allows: it would
  // crash-loop again (src/job/progress.ts). Decided before any worker starts.
  const verdict = noProgressVerdict(s);
  if (verdict !== null) return { noProgress: verdict };
  // Peer watch (issue 21): each node watches the next around the ring; runs recorded before it did not.
  const watch = wf.patched('peer-watch') ? watchTargets(prepared.participants, prepared.watchPorts ?? {}) : undefined;
  const assignments = d.assignRanks(s, prepared.participants, prepared.master, { resumeFrom: lookup.resumeFrom, watch }).map((a) => ({ ...a, ...launchOf(s) }));
  run.apply({ type: 'running' });
  run.publish();
  void wf.CancellationScope.nonCancellable(() => pruneOld(s, prepared.participants[0].nodeId));
  return runAssignments(run, { round: s.round, assignments, succeeded: [] });
}

/**
 * The running part of a round; a run that adopted a round from the run before it (a move to a
 * newer build) runs the same code, and the node activities attach to the live workers.
 */
export async function runAssignments(run: JobRun, adoption: Adoption): Promise<RoundOutcome> {
  const { round, assignments } = adoption;
  const { groupSize } = run.state.spec.rdzv;
  const ids = assignments.map((a) => a.nodeId);
  const outcomes = new Map<string, NodeOutcome>(adoption.succeeded.map((nodeId) => [nodeId, { nodeId, kind: 'succeeded' }]));
  const groups = partition(assignments.filter((a) => !outcomes.has(a.nodeId)), groupSize);
  let done = 0;
  const finished = (nodeIds: string[]) => void run.apply({ type: 'groupFinished', round, nodeIds });
  const scope = new wf.CancellationScope();
  const t = timing(run.state);
  groups.forEach((group, i) => {
    const first = group[0];
    const last = group[group.length - 1];
    const summary = `round ${round}: run group ranks ${first.groupRank}-${last.groupRank} (${group.length} node(s))`;
    const input = { round, assignments: group, timing: t };
    scope
      .run(() => (groups.length === 1 ? runNodes(input, finished) : wf.executeChild(runGroup, { ...groupOptions(run.state, round, 'run', i, summary), args: [input] })))
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
  const ends = () => done === groups.length || bad() || d.interruptReason(run.state, ids) !== null;
  // A round of one group moves to a newer build with its workers (src/job/upgrade.ts); the
  // round's scope is not cancelled then: the next run's activities take its workers over.
  const roundGroups = partition(assignments, groupSize).length;
  const move = () => upgradeMove({ targetChanged: targetChanged(), historyLong: wf.workflowInfo().continueAsNewSuggested, roundGroups }) === 'adopt';
  if (await untilDoneOrMove(ends, move)) {
    const succeeded = [...outcomes.values()].filter((o) => o.kind === 'succeeded').map((o) => o.nodeId);
    return { adopt: { round, assignments, succeeded } };
  }
  if (!bad() && outcomes.size === ids.length) return 'succeeded';
  scope.cancel();
  run.apply({ type: 'roundEnded', outcomes: [...outcomes.values()] });
  run.publish();
  return 'restart';
}
