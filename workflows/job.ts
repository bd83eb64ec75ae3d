/**
 * The job workflow: the durable coordinator of one elastic job (workflow id = rendezvous id).
 * It only applies decisions from src/job/decide.ts; all I/O runs in node activities.
 * See src/job/state.ts for the phases and their transitions.
 */
import * as wf from '@temporalio/workflow';
import { ApplicationFailure, CancelledFailure, isCancellation } from '@temporalio/workflow';
import * as d from '../src/job/decide';
import { drainRequestSchema, joinRequestSchema, jobSpecSchema, leaveRequestSchema, scaleRequestSchema, describeZodError } from '../src/job/spec';
import type { DrainRequest, JobSpecInput } from '../src/job/spec';
import { DEFAULT_DRAIN_GRACE_MS, requestCheckpointFirst } from '../src/job/preempt';
import { FINAL_PHASES, initialState, type Failure, type JobState, type NodeRecord } from '../src/job/state';
import { nodeView, toStatus, type JobStatus } from '../src/job/status';
import { cancelSignal, drainSignal, drainUpdate, groupFinishedSignal, joinUpdate, leaveSignal, lobbyBatchSignal, nodeQuery, scaleSignal, scaleUpdate, statusQuery, type LobbyEvent } from './messages';
import { runRound, prepareRound } from './round';
import { publish } from './publish';
import { applyGrant, dropSpares, leavePool, linkToPool } from './pool-link';
import { poolGrantSignal } from './pool-messages';
import { handOff, keepLedger, ledgerAvailable } from './ledger';
import { timer } from './timers';
import { keepPreempting } from './preempt';
import type { z } from 'zod';

export interface JobInput {
  spec: JobSpecInput;
  /** Carried across continue-as-new. */
  state?: JobState;
}

export interface JobResult {
  jobId: string;
  rounds: number;
  restarts: number;
  worldSize: number;
  /** The final status object, so `telastic status` works after every worker has gone. */
  status: JobStatus;
}

function check<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw ApplicationFailure.nonRetryable(describeZodError(r.error, `${what}: `), 'InvalidInput');
  return r.data;
}

function reject(message: string | null): void {
  if (message !== null) throw ApplicationFailure.nonRetryable(message, 'InvalidInput');
}

/**
 * A job's workflow. Started by `telastic run` and `submitJob` with `{ spec }`; a plain SDK start
 * may pass the spec itself (`args: [spec]`).
 */
export async function elasticJob(input: JobInput | JobSpecInput): Promise<JobResult> {
  if (!('spec' in input)) input = { spec: input };
  const spec = check(jobSpecSchema, input.spec, 'spec');
  let state: JobState = input.state ?? initialState(spec, Date.now());
  const startRound = state.round;
  const get = () => state;
  const set = (s: JobState) => {
    state = s;
  };

  let signals = 0; // taken in this run (Temporal limits signals per run)
  wf.setHandler(statusQuery, () => toStatus(state));
  wf.setHandler(nodeQuery, (nodeId) => nodeView(state, nodeId));
  wf.setHandler(lobbyBatchSignal, (events) => {
    signals++;
    for (const e of events) state = applyLobbyEvent(state, e, Date.now());
  });
  wf.setHandler(groupFinishedSignal, ({ round, nodeIds }) => {
    signals++;
    if (round === state.round) state = { ...state, finished: [...new Set([...state.finished, ...nodeIds])] };
  });
  wf.setHandler(
    joinUpdate,
    (req) => {
      state = d.applyJoin(state, req, Date.now());
      return { accepted: true, state: state.phase };
    },
    { validator: (req) => reject(d.validateJoin(state, check(joinRequestSchema, req, 'join'))) },
  );
  wf.setHandler(leaveSignal, (req) => {
    signals++;
    const r = leaveRequestSchema.safeParse(req);
    if (r.success) state = d.applyDrain(state, r.data.nodeId, 'left');
  });
  // Checkpoint-first drains are served beside the main loop (workflows/preempt.ts); a run
  // recorded before them (no marker) treats every drain as a plain one.
  const preempting = wf.patched('checkpoint-first-drain');
  const drain = (req: DrainRequest) => {
    if (req.checkpointFirst && preempting) state = requestCheckpointFirst(state, req.nodeId, req.graceMs ?? DEFAULT_DRAIN_GRACE_MS, Date.now());
    else state = d.applyDrain(state, req.nodeId);
  };
  wf.setHandler(
    drainUpdate,
    (req) => {
      drain(req);
      return { accepted: true };
    },
    { validator: (req) => reject(d.validateDrain(state, check(drainRequestSchema, req, 'drain').nodeId)) },
  );
  wf.setHandler(drainSignal, (req) => {
    signals++;
    const r = drainRequestSchema.safeParse(req);
    if (r.success) drain(r.data);
  });
  wf.setHandler(scaleSignal, (req) => {
    signals++;
    const r = scaleRequestSchema.safeParse(req);
    if (r.success && d.validateScale(state, r.data) === null) state = d.applyScale(state, r.data);
  });
  wf.setHandler(
    scaleUpdate,
    (req) => {
      state = d.applyScale(state, req);
      return { minNodes: state.spec.minNodes, maxNodes: state.spec.maxNodes };
    },
    { validator: (req) => reject(d.validateScale(state, check(scaleRequestSchema, req, 'scale'))) },
  );
  wf.setHandler(poolGrantSignal, ({ nodes }) => {
    signals++;
    if (!FINAL_PHASES.includes(state.phase)) state = applyGrant(state, nodes, Date.now());
  });
  wf.setHandler(cancelSignal, () => {
    signals++;
    state = { ...state, cancelRequested: true };
  });

  const finish = (phase: 'failed' | 'cancelled' | 'succeeded') => {
    state = { ...state, phase };
    publish(state);
    // Read by getJobStatus once no worker is left. Patched: histories recorded before it replay.
    if (wf.patched('final-status-memo')) wf.upsertMemo({ status: toStatus(state) });
  };
  const fail = (reason: string, failure: Failure | null): never => {
    finish('failed');
    throw ApplicationFailure.create({ message: reason, type: 'JobFailed', nonRetryable: true, details: [{ failure, status: toStatus(state) }] });
  };
  const throwIfCancelled = () => {
    if (state.cancelRequested) throw new CancelledFailure('job cancelled');
  };

  const pool = state.spec.pool;
  let ended = false;
  // Not cancellable: a cancelled job still gives its nodes back (leavePool), then the link ends.
  const link = pool ? wf.CancellationScope.nonCancellable(() => linkToPool(pool, get, set, () => ended)) : Promise.resolve();
  // The ledger, in the background: the job never waits on it (workflows/ledger.ts).
  void wf.CancellationScope.nonCancellable(async () => {
    if (state.ledger === undefined) {
      if (input.state || !wf.patched('ledger') || !(await ledgerAvailable())) return;
      state = { ...state, ledger: { cursor: null, outbox: [] } };
    }
    await keepLedger(get, set, () => ended);
  });
  if (preempting) void wf.CancellationScope.nonCancellable(() => keepPreempting(get, set, () => ended));
  try {
    for (;;) {
      throwIfCancelled();
      state = d.settleMembership(state); // drains and a shrunk maxNodes apply before the round forms
      if (pool) state = dropSpares(state);
      await gather(get, set, fail);
      throwIfCancelled();
      const prepared = await prepareRound(get, set);
      if (prepared && 'refused' in prepared) return fail(prepared.refused, null);
      if (!prepared) continue; // a participant did not answer: form the round again without it
      const settled = d.settleFailure(state);
      state = settled.state;
      if (settled.exhausted) {
        const f = state.lastFailure as Failure;
        fail(`job failed after ${state.restarts - 1} restart(s) (max ${state.spec.maxRestarts}): ${d.describeFailure(f)}`, f);
      }
      const outcome = await runRound(get, set, prepared);
      if (outcome === 'succeeded') {
        finish('succeeded');
        return { jobId: state.spec.jobId, rounds: state.round, restarts: state.restarts, worldSize: toStatus(state).worldSize, status: toStatus(state) };
      }
      if (d.shouldContinueAsNew(state, startRound, wf.workflowInfo().continueAsNewSuggested, signals)) {
        ended = true;
        await link;
        await wf.condition(wf.allHandlersFinished);
        await wf.continueAsNew<typeof elasticJob>({ spec: state.spec, state });
      }
    }
  } catch (err) {
    if (isCancellation(err) || state.cancelRequested) {
      finish('cancelled');
      throw new CancelledFailure('job cancelled', [{ status: toStatus(state) }]);
    }
    throw err;
  } finally {
    ended = true;
    // Not on continue-as-new (which throws out of continueAsNew): the next run keeps the nodes
    // and the outbox.
    if (FINAL_PHASES.includes(state.phase)) {
      if (pool) await leavePool(pool, state);
      await wf.CancellationScope.nonCancellable(() => handOff(get, set));
    }
  }
}

/** A join or leave forwarded by a lobby; a join that does not parse is refused like a mismatch. */
function applyLobbyEvent(state: JobState, e: LobbyEvent, now: number): JobState {
  if (e.kind === 'leave') {
    const r = leaveRequestSchema.safeParse(e.req);
    return r.success ? d.applyDrain(state, r.data.nodeId, 'left') : state;
  }
  const r = joinRequestSchema.safeParse(e.req);
  if (r.success) return d.applyJoinOrReject(state, r.data, now);
  const nodeId = typeof e.req?.nodeId === 'string' ? e.req.nodeId : null;
  if (nodeId === null) return state;
  return d.rejectJoin(state, nodeId, describeZodError(r.error, 'join: '));
}

/**
 * Wait until at least minNodes are available, failing after join_timeout below it. A round
 * formed from scratch (or after waiting below min) runs a last call for more nodes, unless the
 * job's nodes come from a pool; a round of known survivors closes at once.
 */
async function gather(get: () => JobState, set: (s: JobState) => void, fail: (r: string, f: Failure | null) => never): Promise<void> {
  let lastCall = get().members.length === 0;
  for (;;) {
    const s = get();
    if (d.available(s) >= s.spec.minNodes) break;
    lastCall = true;
    const since = s.belowMinSince ?? Date.now();
    set({ ...s, phase: 'waiting', belowMinSince: since });
    publish(get());
    const left = since + s.spec.rdzv.joinTimeoutMs - Date.now();
    const joinTimeout = timer(`join timeout: fails the job unless min ${s.spec.minNodes} node(s) are here`);
    const ok = left > 0 && (await wf.condition(() => d.available(get()) >= get().spec.minNodes || get().cancelRequested, left, joinTimeout));
    if (get().cancelRequested) return;
    if (!ok) fail(d.joinTimeoutReason(get()), get().pendingFailure ?? get().lastFailure);
  }
  set({ ...get(), phase: 'rendezvous', belowMinSince: null });
  publish(get());
  // A pool grants every free node it can at once; more come later without a restart's cost, so a
  // pool job does not hold its first round for a last call.
  if (lastCall && !get().spec.pool && get().spec.rdzv.lastCallTimeoutMs > 0) {
    const lastCallTimer = timer(`last call for more nodes (up to max ${get().spec.maxNodes})`);
    await wf.condition(() => d.available(get()) >= get().spec.maxNodes || get().cancelRequested, get().spec.rdzv.lastCallTimeoutMs, lastCallTimer);
  }
}

export type { NodeRecord };
