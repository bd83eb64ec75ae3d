/**
 * Group workflows: child workflows of a job that own at most `group_size` nodes' activities
 * for one round, so that pending activities and heartbeats are spread over many executions
 * (DESIGN.md, Scale). They decide nothing: they run `prepare` or `runWorkers` on their nodes and
 * report back in one batch, their result. A new pair per round keeps each history short.
 */
import * as wf from '@temporalio/workflow';
import { ActivityCancellationType, ActivityFailure, ApplicationFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { HEALTH_CHECK_FAILED, NOT_ALLOWED, WORKERS_STUCK, nodeQueue } from '../activities/types';
import type { Launch, RoundAssignment } from '../src/job/assignment';
import type { Failure, NodeOutcome } from '../src/job/state';
import { peerLostOutcomes } from '../src/job/peer-watch';
import { groupFinishedSignal } from './messages';

export interface GroupTiming {
  heartbeatTimeoutMs: number;
  prepareTimeoutMs: number;
  shutdownTimeoutMs: number;
  /** The prepare bound of the round's newcomers (newcomerPrepareTimeoutMs); absent in inputs of older runs. */
  newcomerPrepareTimeoutMs?: number;
  /**
   * Rounds of several groups (src/job/groups.ts, largeRoundSlack): how long a member may take to
   * pick up `runWorkers`, and its heartbeat timeout. Absent (inputs of older runs): the prepare
   * bound and heartbeatTimeoutMs.
   */
  runStartTimeoutMs?: number;
  runHeartbeatTimeoutMs?: number;
}

/**
 * `refused`: the node's agent will not run the job's command (a pool agent's --allow); `stuck`:
 * its agent could not end the workers of its last round (`why` names them); `unhealthy`: its
 * agent's health check failed (`why` is the check's last stderr line).
 */
export type PrepareAnswer =
  | { nodeId: string; ok: true; port: number; watchPort?: number }
  | { nodeId: string; ok: false; why: string; refused?: boolean; stuck?: boolean; unhealthy?: { exitCode: number | null } };

export type { NodeOutcome };

/**
 * Node activities are pinned to the node's own queue: they start processes on that machine.
 * One attempt only: a retry after a timeout would go back to the same (dead) node. A dead node
 * is noticed by the schedule-to-start timeout of `prepare` and the heartbeat timeout of
 * `runWorkers`; the job decides what a lost node means.
 */
function onNode(t: GroupTiming, nodeId: string, summary: string, long: boolean): NodeActivities {
  return wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: long ? (t.runStartTimeoutMs ?? t.prepareTimeoutMs) : t.prepareTimeoutMs,
    // prepare stops the last round's workers: SIGTERM, SIGKILL after the shutdown timeout, and
    // as long again (at least 5 s) for them to die before they are reported stuck.
    startToCloseTimeout: long ? '3650 days' : 2 * t.shutdownTimeoutMs + 65_000,
    heartbeatTimeout: t.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    summary,
  });
}

/** How a node activity that did not complete normally ended, seen from the workflow. */
export function classify(err: unknown, t: GroupTiming): { kind: 'stopped' } | { kind: 'lost'; why: string } {
  if (isCancellation(err)) return { kind: 'stopped' };
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) {
    return cause.timeoutType === 'HEARTBEAT'
      ? { kind: 'lost', why: `no heartbeat within ${t.heartbeatTimeoutMs / 1000}s` }
      : { kind: 'lost', why: `did not answer within ${t.prepareTimeoutMs / 1000}s` };
  }
  return { kind: 'lost', why: cause instanceof Error ? cause.message : String(cause) };
}

export interface PrepareGroupInput extends GroupStart {
  jobId: string;
  round: number;
  nodeIds: string[];
  timing: GroupTiming;
  /** Pool jobs: what the nodes are to run, for their agents to check. */
  launch?: Launch;
  /** The job's checkpoint directory, for the agents' health checks. */
  checkpointDir?: string;
  /** Of `nodeIds`, the nodes new to the job: their prepare bound is timing.newcomerPrepareTimeoutMs. */
  newcomers?: string[];
}

export interface StartBatch {
  size: number;
  everyMs: number;
}

/** How a group of a round of several groups starts its node activities (workflows/round.ts stagger); absent: all at once. */
export interface GroupStart {
  /** How long the group waits before it schedules its activities (src/job/groups.ts groupStartDelayMs). */
  startAfterMs?: number;
  /** Schedule the activities this many at a time, this far apart (src/job/groups.ts START_BATCH). */
  batch?: StartBatch;
  /** An activity whose start went unheard is tried once more (unheard). */
  rerunUnheard?: boolean;
}

/** A group's turn in its round's stagger (GroupStart.startAfterMs). */
async function waitTurn(input: GroupStart, what: string): Promise<void> {
  if (input.startAfterMs) await wf.sleep(input.startAfterMs, { summary: `stagger: the round's groups schedule their ${what} 100 ms apart` });
}

/**
 * Calls `start` on each item, `batch.size` at a time `batch.everyMs` apart, until `stop()`; all
 * at once without a batch.
 */
async function inBatches<T>(items: readonly T[], batch: StartBatch | undefined, start: (item: T) => void, stop: () => boolean = () => false): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    if (batch && i > 0 && i % batch.size === 0) {
      await wf.sleep(batch.everyMs, { summary: `stagger: the next ${batch.size} activities of the group` });
      if (stop()) return;
    }
    start(items[i]);
  }
}

/** The message of a node activity's failure of `type` (NOT_ALLOWED, WORKERS_STUCK), else null. */
function failureOf(err: unknown, type: string): string | null {
  const cause = err instanceof ActivityFailure ? err.cause : null;
  return cause instanceof ApplicationFailure && cause.type === type ? cause.message : null;
}

function healthFailure(err: unknown): { why: string; exitCode: number | null } | null {
  const cause = err instanceof ActivityFailure ? err.cause : null;
  if (!(cause instanceof ApplicationFailure) || cause.type !== HEALTH_CHECK_FAILED) return null;
  const exitCode = (cause.details?.[0] as { exitCode?: unknown } | undefined)?.exitCode;
  return { why: cause.message, exitCode: typeof exitCode === 'number' ? exitCode : null };
}

/**
 * Whether a node activity timed out on its heartbeat without a heartbeat ever recorded: the
 * server recorded its start, but the node never got it (a start recorded after matching gave up
 * on it reaches no one: 1 to 5 per 2,048-node round on 2 cores), or the node died within its
 * first heartbeat interval. Such an activity is tried once more on the same node, in runs that
 * reached this code: a live node picks it up at once, a dead one is caught by the pick-up bound
 * (or, running, by the peer that watches it).
 */
function unheard(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : null;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'HEARTBEAT' && (cause.lastHeartbeatDetails === undefined || cause.lastHeartbeatDetails === null);
}

/** Only in rounds of several groups: a round of one group is not loaded enough to lose starts, and a node frozen before its first heartbeat must cost it heartbeat_timeout alone (issue 21's frozen-node figure). */
const retryUnheard = (rerun: boolean | undefined, err: unknown, retried: boolean) => !!rerun && !retried && unheard(err) && wf.patched('rerun-unheard-start');

/** A port an agent gave: anything else leaves its node watched by heartbeats only. */
function validPort(p: unknown): p is number {
  return typeof p === 'number' && Number.isInteger(p) && p >= 1 && p <= 65_535;
}

/** `prepare` on every node of the group as a child workflow. */
export async function prepareGroup(input: PrepareGroupInput): Promise<PrepareAnswer[]> {
  await waitTurn(input, 'prepares');
  return prepareNodes(input);
}

/** `prepare` on every node; one answer per node, in the given order. */
export async function prepareNodes(input: PrepareGroupInput): Promise<PrepareAnswer[]> {
  const { jobId, round, launch, checkpointDir } = input;
  const newcomers = new Set(input.newcomers ?? []);
  const newcomerTiming = { ...input.timing, prepareTimeoutMs: input.timing.newcomerPrepareTimeoutMs ?? input.timing.prepareTimeoutMs };
  const answers: Promise<PrepareAnswer>[] = [];
  const prepareOne = (nodeId: string, retried = false): Promise<PrepareAnswer> => {
    const timing = newcomers.has(nodeId) ? newcomerTiming : input.timing;
    return onNode(timing, nodeId, `round ${round}: prepare ${nodeId}${retried ? ' (again: its first start went unheard)' : ''}`, false)
      .prepare({ jobId, round, nodeId, ...(launch ? { launch } : {}), ...(checkpointDir ? { checkpointDir } : {}) })
      .then(
        (r): PrepareAnswer => ({ nodeId, ok: true, port: r.port, ...(validPort(r.watchPort) ? { watchPort: r.watchPort } : {}) }),
        (e: unknown): PrepareAnswer | Promise<PrepareAnswer> => {
          if (retryUnheard(input.rerunUnheard, e, retried)) return prepareOne(nodeId, true);
          const refused = failureOf(e, NOT_ALLOWED);
          if (refused !== null) return { nodeId, ok: false, why: refused, refused: true };
          const stuck = failureOf(e, WORKERS_STUCK);
          if (stuck !== null) return { nodeId, ok: false, why: stuck, stuck: true };
          const sick = healthFailure(e);
          if (sick !== null) return { nodeId, ok: false, why: sick.why, unhealthy: { exitCode: sick.exitCode } };
          const c = classify(e, timing);
          return { nodeId, ok: false, why: c.kind === 'lost' ? c.why : 'did not answer prepare' };
        },
      );
  };
  await inBatches(input.nodeIds, input.batch, (nodeId) => answers.push(prepareOne(nodeId)));
  return Promise.all(answers);
}

export interface RunGroupInput extends GroupStart {
  round: number;
  assignments: RoundAssignment[];
  timing: GroupTiming;
}

/**
 * `runWorkers` on every node of the group as a child workflow. The first finished node is
 * signalled to the job at once: it stops the job from admitting joiners into a round that is
 * ending.
 */
export async function runGroup(input: RunGroupInput): Promise<NodeOutcome[]> {
  const parent = wf.workflowInfo().parent;
  await waitTurn(input, 'runWorkers');
  return runNodes(input, async (nodeIds) => {
    if (!parent) return;
    await wf.getExternalWorkflowHandle(parent.workflowId).signal(groupFinishedSignal, { round: input.round, nodeIds }).catch(() => undefined);
  });
}

/**
 * `runWorkers` on every node. Returns when all succeeded, or at the first node that failed or
 * vanished (the others are cancelled; the job restarts the round anyway). `onFirstFinished`
 * hears of the first nodes whose workers exited 0 while others still run.
 */
export async function runNodes(input: RunGroupInput, onFirstFinished: (nodeIds: string[]) => Promise<void> | void): Promise<NodeOutcome[]> {
  const { round, assignments } = input;
  // runWorkers' own bounds, for classify's messages too.
  const t = input.timing;
  const timing = { ...t, prepareTimeoutMs: t.runStartTimeoutMs ?? t.prepareTimeoutMs, heartbeatTimeoutMs: t.runHeartbeatTimeoutMs ?? t.heartbeatTimeoutMs };
  const outcomes = new Map<string, NodeOutcome>();
  const scope = new wf.CancellationScope({ cancellable: true });
  const bad = () => [...outcomes.values()].some((o) => o.kind !== 'succeeded');
  const runOne = (a: RoundAssignment, retried = false): void => {
    const ranks = `${a.rankOffset}-${a.rankOffset + a.localWorldSize - 1}`;
    const summary = `round ${round}: run ranks ${ranks} on ${a.nodeId} (group rank ${a.groupRank}/${a.groupWorldSize})${retried ? ' (again: its first start went unheard)' : ''}`;
    const act = onNode(timing, a.nodeId, summary, true);
    scope
      .run(() => act.runWorkers(a))
      .then(
        (r) => {
          if (r.state === 'succeeded') return outcomes.set(a.nodeId, { nodeId: a.nodeId, kind: 'succeeded' });
          if (r.state === 'stuck') return outcomes.set(a.nodeId, { nodeId: a.nodeId, kind: 'stuck', message: r.message });
          // The node it watched is gone (src/job/peer-watch.ts): blame that one, this one is a victim.
          if (r.state === 'peerLost') {
            for (const o of peerLostOutcomes(a.nodeId, r.peer, r.message, (id) => outcomes.has(id))) outcomes.set(o.nodeId, o);
            return;
          }
          const f = r.failure;
          const failure: Failure = { nodeId: a.nodeId, rank: f.rank, exitCode: f.exitCode, signal: f.signal, message: f.message, round };
          return outcomes.set(a.nodeId, { nodeId: a.nodeId, kind: 'failed', failure });
        },
        (e: unknown) => {
          if (outcomes.has(a.nodeId)) return; // already lost by a peer's report: that is its outcome
          if (retryUnheard(input.rerunUnheard, e, retried)) return runOne(a, true);
          const stuck = failureOf(e, WORKERS_STUCK);
          outcomes.set(a.nodeId, stuck !== null ? { nodeId: a.nodeId, kind: 'stuck', message: stuck } : { nodeId: a.nodeId, ...classify(e, timing) });
        },
      );
  };
  await inBatches(assignments, input.batch, (a) => runOne(a), bad);
  const done = () => outcomes.size === assignments.length || bad();
  await wf.condition(() => done() || outcomes.size > 0);
  if (!done()) await onFirstFinished([...outcomes.keys()]);
  await wf.condition(done);
  if (bad()) scope.cancel();
  return [...outcomes.values()];
}
