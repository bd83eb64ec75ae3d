/**
 * The job workflow: the durable coordinator of one elastic job (workflow id = rendezvous id).
 * One loop: settle membership, gather, prepare, settle failure, run the round, continue as new.
 * Its state has one owner (workflows/job-run.ts): every change is an event of src/job/events.ts,
 * every decision a function of src/job/decide.ts; all I/O runs in node activities. See
 * src/job/state.ts for the phases and their transitions.
 */
import * as wf from '@temporalio/workflow';
import { ApplicationFailure, CancelledFailure, isCancellation } from '@temporalio/workflow';
import * as decide from '../src/job/decide';
import * as health from '../src/job/health';
import { jobSpecSchema, type JobSpecInput } from '../src/job/spec';
import { FINAL_PHASES, initialState, type Failure, type JobState, type NodeRecord } from '../src/job/state';
import { toStatus, type JobStatus } from '../src/job/status';
import { checked, handleMessages } from './job-handlers';
import { JobRun } from './job-run';
import { handOff } from './ledger';
import { leavePool } from './pool-link';
import { prepareRound, runAssignments, runRound, type RoundOutcome } from './round';
import { startSideLoops } from './side-loops';
import { continueAsNewOnCurrent, targetChanged, type Adoption } from './upgrade';
import { upgradeMove } from '../src/job/upgrade';
import { NO_PROGRESS } from '../src/job/progress';

export interface JobInput {
  spec: JobSpecInput;
  /** Carried across continue-as-new. */
  state?: JobState;
  /** The running round a run on an older build handed over (docs/upgrading.md): run it first. */
  adopt?: Adoption;
  /**
   * The previous run continued as new while it gathered nodes: this run owes the round a last
   * call, which ends at `lastCallEnds` (epoch ms) if that run had begun it.
   */
  gathering?: Gathering;
}

export interface JobResult {
  jobId: string;
  rounds: number;
  restarts: number;
  worldSize: number;
  /** The final status object, so `telastic status` works after every worker has gone. */
  status: JobStatus;
}

/**
 * A job's workflow. Started by `telastic run` and `submitJob` with `{ spec }`; a plain SDK start
 * may pass the spec itself (`args: [spec]`).
 */
export async function elasticJob(input: JobInput | JobSpecInput): Promise<JobResult> {
  if (!('spec' in input)) input = { spec: input };
  const spec = checked(jobSpecSchema, input.spec, 'spec');
  const run = new JobRun(input.state ?? initialState(spec, Date.now()));
  const startRound = run.state.round;
  handleMessages(run);
  if (input.state) run.retell();

  const finish = (phase: 'failed' | 'cancelled' | 'succeeded', verdict?: string) => {
    run.apply({ type: 'ended', phase, ...(verdict ? { verdict } : {}) });
    run.publish();
    wf.upsertMemo({ status: toStatus(run.state) }); // read by getJobStatus once no worker is left
  };
  // `type`: JobFailed, or a verdict a requeue cannot change (NoProgress, src/job/progress.ts;
  // NoUsableNode, src/job/health.ts), which `telastic run` exits 3 for; a verdict is kept in the status.
  const fail = (reason: string, failure: Failure | null, type = 'JobFailed'): never => {
    finish('failed', type === 'JobFailed' ? undefined : reason);
    throw ApplicationFailure.create({ message: reason, type, nonRetryable: true, details: [{ failure, status: toStatus(run.state) }] });
  };

  const loops = startSideLoops(run, !input.state);
  // Continue as new, onto the deployment's current build when it changed (workflows/upgrade.ts).
  const continueAsNew = async (carry: { adopt?: Adoption; gathering?: Gathering } = {}): Promise<never> => {
    await loops.stop();
    await wf.condition(wf.allHandlersFinished);
    return continueAsNewOnCurrent<typeof elasticJob>({ spec: run.state.spec, state: run.state, ...carry });
  };
  let adopted = input.adopt;
  let gathering = input.gathering;
  try {
    for (;;) {
      let outcome: RoundOutcome;
      if (adopted) {
        outcome = await runAssignments(run, adopted); // the round the previous run handed over
        adopted = undefined;
      } else {
        run.apply({ type: 'boundary' });
        await gather(run, fail, (g) => continueAsNew({ gathering: g }), gathering);
        gathering = undefined;
        const prepared = await prepareRound(run);
        if (prepared && 'refused' in prepared) return fail(prepared.refused, null);
        if (!prepared) continue; // a participant did not answer: form the round again without it
        const { restarts, lastFailure } = run.apply({ type: 'failureSettled' });
        if (decide.restartsExhausted(run.state)) {
          const f = lastFailure as Failure;
          fail(`job failed after ${restarts - 1} restart(s) (max ${spec.maxRestarts}): ${decide.describeFailure(f)}`, f);
        }
        outcome = await runRound(run, prepared);
      }
      if (outcome === 'succeeded') {
        finish('succeeded');
        const status = toStatus(run.state);
        return { jobId: status.jobId, rounds: status.round, restarts: status.restarts, worldSize: status.worldSize, status };
      }
      if (outcome !== 'restart' && 'noProgress' in outcome) return fail(outcome.noProgress, run.state.lastFailure, NO_PROGRESS);
      if (outcome !== 'restart') await continueAsNew({ adopt: outcome.adopt }); // the round goes along
      const upgrade = upgradeMove({ targetChanged: targetChanged(), historyLong: false, roundGroups: 0 }) === 'continue';
      if (upgrade || decide.shouldContinueAsNew(run.state, startRound, wf.workflowInfo().continueAsNewSuggested, run.signals)) await continueAsNew();
    }
  } catch (err) {
    if (isCancellation(err)) {
      finish('cancelled');
      throw new CancelledFailure('job cancelled', [{ status: toStatus(run.state) }]);
    }
    throw err;
  } finally {
    await loops.stop();
    // Not on continue-as-new (which throws out of continueAsNew): the next run keeps the nodes
    // and the outbox.
    if (FINAL_PHASES.includes(run.state.phase)) {
      if (spec.pool) await leavePool(spec.pool, run.state);
      await wf.CancellationScope.nonCancellable(() => handOff(run));
    }
  }
}

/** What a run that continued as new while it gathered nodes hands on (JobInput.gathering). */
export interface Gathering {
  lastCallEnds: number | null;
}

/**
 * Wait until at least minNodes are available, failing after join_timeout below it, or after
 * unusable_timeout when the nodes kept out (quarantined, failing their health check) are what
 * keeps it below (src/job/health.ts: "no usable node"). A round
 * formed from scratch (or after waiting below min) runs a last call for more nodes, unless the
 * job's nodes come from a pool; a round of known survivors closes at once. A long wait (many
 * lobby batches, or a long history) continues as new on the way, carrying where it was.
 */
async function gather(
  run: JobRun,
  fail: (reason: string, f: Failure | null, type?: string) => never,
  moveOn: (g: Gathering) => Promise<never>,
  carried?: Gathering,
): Promise<void> {
  let lastCall = run.state.members.length === 0 || carried !== undefined;
  const enough = () => decide.available(run.state) >= run.state.spec.minNodes;
  // Histories recorded before this check keep their shape (the wait's predicate and commands).
  const mayMove = wf.patched('gather-continues');
  const full = () => mayMove && decide.shouldContinueAsNewGathering(wf.workflowInfo().continueAsNewSuggested, run.signals);
  while (!enough()) {
    lastCall = true;
    const s = run.apply({ type: 'waiting', now: Date.now() });
    const { belowMinSince, spec } = s;
    const verdict = health.unusableVerdict(s, Date.now());
    if (verdict !== null) fail(verdict, s.pendingFailure ?? s.lastFailure, health.NO_USABLE_NODE);
    const joinLeft = (belowMinSince ?? Date.now()) + spec.rdzv.joinTimeoutMs - Date.now();
    if (joinLeft <= 0) fail(decide.joinTimeoutReason(s), s.pendingFailure ?? s.lastFailure);
    if (full()) await moveOn({ lastCallEnds: null });
    run.publish();
    const unusable = health.unusableReason(s);
    const unusableLeft = unusable !== null && s.unusableSince != null ? s.unusableSince + health.unusableTimeoutMs(s) - Date.now() : Infinity;
    const summary = unusable !== null
      ? `${unusable}: fails the job in ${Math.round(Math.min(joinLeft, unusableLeft) / 1000)}s unless one becomes usable`.slice(0, 400)
      : `join timeout: fails the job unless min ${spec.minNodes} node(s) are here`;
    // Woken when enough are here, when whether the job is unusable changes, at a deadline, or
    // when this run should hand the wait to a fresh one.
    const changed = () => enough() || (health.unusableReason(run.state) === null) !== (unusable === null) || full();
    await wf.condition(changed, Math.max(1, Math.min(joinLeft, unusableLeft)), { summary });
  }
  const { spec } = run.apply({ type: 'gathered' });
  run.publish();
  // A pool grants every free node it can at once; more come later without a restart's cost, so a
  // pool job does not hold its first round for a last call.
  if (lastCall && !spec.pool && spec.rdzv.lastCallTimeoutMs > 0) {
    const summary = `last call for more nodes (up to max ${spec.maxNodes})`;
    const ends = carried?.lastCallEnds ?? Date.now() + spec.rdzv.lastCallTimeoutMs;
    const all = () => decide.available(run.state) >= run.state.spec.maxNodes;
    await wf.condition(() => all() || full(), Math.max(1, ends - Date.now()), { summary });
    if (!all() && full() && Date.now() < ends) await moveOn({ lastCallEnds: ends });
  }
}

export type { NodeRecord };
