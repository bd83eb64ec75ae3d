/**
 * One rendezvous round: `prepare` on every participant, then `runWorkers` on all of them until
 * they finish, one fails or vanishes, or the membership must change. A round of more than
 * `group_size` nodes runs the node activities in group workflows (workflows/group.ts) of at most
 * `group_size` nodes; a round of one group runs the same code in the job itself. Either way no
 * execution has more than `group_size` node activities pending.
 */
import * as wf from '@temporalio/workflow';
import * as d from '../src/job/decide';
import { START_BATCH, groupStartDelayMs, groupWorkflowId, largeRoundSlack, memberPrepareTimeoutMs, newcomerPrepareTimeoutMs, partition, tierWorkflowId, tiersOf } from '../src/job/groups';
import type { JobState, NodeOutcome, NodeRecord } from '../src/job/state';
import type { Launch, RoundAssignment } from '../src/job/assignment';
import { findResumePoint, pruneOld } from './checkpoint';
import { prepareNodes, runGroup, runNodes, type GroupTiming, type PrepareAnswer, type PrepareGroupInput, type RunGroupInput, type GroupStart } from './group';
import { childOptions, prepareTier, runTier, type TierGroup } from './tier';
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
 * The timing of a round of `participants` nodes, `newcomers` of them new to the job: known members
 * pick up `prepare` and `runWorkers` within memberPrepareTimeoutMs (runs that reached this code
 * with it: a round's commands stay as they were recorded), newcomers pick up `prepare` within the
 * longer of that and newcomerPrepareTimeoutMs; a round of several groups gives `runWorkers` a
 * longer pick-up bound and heartbeat timeout (largeRoundSlack, in runs that reached it).
 */
function roundTiming(s: JobState, participants: number, newcomers = 0): GroupTiming {
  const t = timing(s);
  const { groupSize } = s.spec.rdzv;
  const members = participants > groupSize && wf.patched('member-prepare-scales') ? memberPrepareTimeoutMs(t.prepareTimeoutMs, participants, groupSize) : t.prepareTimeoutMs;
  const slack = participants > groupSize && wf.patched('large-round-slack') ? largeRoundSlack(s.spec.rdzv, participants) : null;
  return { ...t, prepareTimeoutMs: members, newcomerPrepareTimeoutMs: Math.max(members, newcomerPrepareTimeoutMs(t.prepareTimeoutMs, newcomers)), ...(slack ?? {}) };
}

/**
 * Whether this round runs its groups in tiers (workflows/tier.ts): past `group_size` groups, in
 * runs that reached this code with the tiers; null when the job starts its groups itself.
 */
function tiered<T>(s: JobState, groups: T[]): T[][] | null {
  const tiers = tiersOf(groups, s.spec.rdzv.groupSize);
  return tiers !== null && wf.patched('round-tiers') ? tiers : null;
}

/**
 * When group `i` of a round of `groups` schedules its node activities, and how many at a time
 * (src/job/groups.ts groupStartDelayMs, START_BATCH), and that a start that went unheard is tried
 * again (workflows/group.ts unheard), in runs that reached this code; a round of one group
 * schedules them all at once and tries none again.
 */
function stagger(i: number, groups: number): GroupStart {
  if (groups <= 1 || !wf.patched('stagger-groups')) return {};
  const ms = groupStartDelayMs(i, groups);
  return { ...(ms > 0 ? { startAfterMs: ms } : {}), batch: { ...START_BATCH }, rerunUnheard: true };
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
  const t = roundTiming(s, plan.participants.length, newcomers.size);
  const input = (nodeIds: string[], i: number) => {
    const fresh = nodeIds.filter((id) => newcomers.has(id));
    return { jobId: spec.jobId, round, nodeIds, timing: t, ...(fresh.length ? { newcomers: fresh } : {}), ...launchOf(s), ...(spec.checkpointDir ? { checkpointDir: spec.checkpointDir } : {}), ...stagger(i, groups.length) };
  };
  const answers = await prepareAll(s, groups.map((nodeIds, i): TierGroup<PrepareGroupInput> => ({
    workflowId: groupWorkflowId(spec.jobId, round, 'prepare', i),
    summary: `round ${round}: prepare ${nodeIds.length} node(s): ${nodeIds[0]}…`,
    input: input(nodeIds, i),
  })));
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
  let { members } = run.apply({ type: 'prepared', participants: plan.participants.map((p) => p.nodeId), unanswered });
  // Nodes that did not answer are dropped (and nudged; a member's loss is settled as a failure
  // below, as after a re-formation) and the round goes on without them: none of its workers
  // started, and forming it again for them cost a 2,048-node job a round each time one of its
  // node activities came late (runs that reached this code). Stuck workers still re-form.
  const missing = unanswered.length > 0 && unanswered.every((u) => !u.stuck);
  if (missing && wf.patched('round-without-unanswered')) {
    const gone = new Set(unanswered.map((u) => u.nodeId));
    ({ members } = run.apply({ type: 'prepared', participants: plan.participants.map((p) => p.nodeId).filter((id) => !gone.has(id)), unanswered: [] }));
  } else if (unanswered.length > 0) return null;
  // Every participant may have been drained (or left) while prepare ran: form again.
  if (members.length === 0 || members.length < run.state.spec.minNodes) return null;
  const first = answers.find((a) => a.nodeId === members[0].nodeId);
  const watchPorts = Object.fromEntries(answers.flatMap((a) => (a.ok && a.watchPort !== undefined ? [[a.nodeId, a.watchPort]] : [])));
  return { participants: members, master: { addr: members[0].address, port: first?.ok ? first.port : 0 }, watchPorts };
}

/**
 * `prepare` on every group. One group: the job runs it itself: no child workflow to land on a
 * frozen coordinator while the job recovers. Several: one child workflow each; past group_size
 * of them, one tier child per group_size groups.
 */
async function prepareAll(s: JobState, groups: TierGroup<PrepareGroupInput>[]): Promise<PrepareAnswer[]> {
  if (groups.length === 1) return prepareNodes(groups[0].input);
  const tiers = tiered(s, groups);
  // Without tiers the job does a tier's work itself: one child per group.
  if (tiers === null) return prepareTier(groups);
  const answers = tiers.map((tier, k) => wf.executeChild(prepareTier, { ...childOptions(tierWorkflowId(s.spec.jobId, s.round, 'prepare', k), `round ${s.round}: prepare tier ${k}: ${tier.length} group(s)`), args: [tier] }));
  return (await Promise.all(answers)).flat();
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
  const { runHeartbeatTimeoutMs } = roundTiming(s, prepared.participants.length);
  const assignments = d.assignRanks(s, prepared.participants, prepared.master, { resumeFrom: lookup.resumeFrom, watch, ...(runHeartbeatTimeoutMs ? { heartbeatTimeoutMs: runHeartbeatTimeoutMs } : {}) }).map((a) => ({ ...a, ...launchOf(s) }));
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
  const t = roundTiming(run.state, assignments.length);
  const units = runUnits(run.state, round, groups, t, finished);
  for (const u of units) {
    void scope
      .run(u.run)
      .then(
        (results) => {
          for (const o of results) outcomes.set(o.nodeId, o);
          finished(results.filter((o) => o.kind === 'succeeded').map((o) => o.nodeId));
        },
        // The group workflow itself failed or was cancelled: its nodes are stopped, no one is blamed.
        () => u.nodes.forEach((a) => outcomes.has(a.nodeId) || outcomes.set(a.nodeId, { nodeId: a.nodeId, kind: 'stopped' })),
      )
      .finally(() => done++);
  }
  const bad = () => [...outcomes.values()].some((o) => o.kind !== 'succeeded');
  const ends = () => done === units.length || bad() || d.interruptReason(run.state, ids) !== null;
  // A round of one group moves to a newer build with its workers (src/job/upgrade.ts); the
  // round's scope is not cancelled then: the next run's activities take its workers over.
  const roundGroups = partition(assignments, groupSize).length;
  const move = (atCheck: boolean) => upgradeMove({ targetChanged: targetChanged(), historyLong: atCheck && wf.workflowInfo().continueAsNewSuggested, roundGroups }) === 'adopt';
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

/**
 * What the job itself awaits in a running round: the one group's activities, one child per
 * group, or past group_size groups one tier child per group_size of them; each returns its
 * nodes' outcomes.
 */
function runUnits(s: JobState, round: number, groups: RoundAssignment[][], t: GroupTiming, finished: (nodeIds: string[]) => void) {
  if (groups.length === 1) return [{ nodes: groups[0], run: () => runNodes({ round, assignments: groups[0], timing: t }, finished) }];
  const children = groups.map((group, i): TierGroup<RunGroupInput> => ({
    workflowId: groupWorkflowId(s.spec.jobId, round, 'run', i),
    summary: `round ${round}: run group ranks ${group[0].groupRank}-${group[group.length - 1].groupRank} (${group.length} node(s))`,
    input: { round, assignments: group, timing: t, ...stagger(i, groups.length) },
  }));
  const tiers = tiered(s, children);
  if (tiers === null) return children.map((c) => ({ nodes: c.input.assignments, run: () => wf.executeChild(runGroup, { ...childOptions(c.workflowId, c.summary), args: [c.input] }) }));
  return tiers.map((tier, k) => ({
    nodes: tier.flatMap((c) => c.input.assignments),
    run: () => wf.executeChild(runTier, { ...childOptions(tierWorkflowId(s.spec.jobId, round, 'run', k), `round ${round}: run tier ${k}: ${tier.length} group(s)`), args: [tier] }),
  }));
}
