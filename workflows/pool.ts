/**
 * The pool workflow (id `pool/NAME`): the durable registry of a pool's nodes and the scheduler
 * that grants them to jobs. Agents register with signal-with-start; jobs send their requests
 * (src/pool/state.ts). It applies the decisions of src/pool/decide.ts and carries out their
 * effects: grants and leaves signalled to jobs. Like Temporal's safe-message-handlers sample
 * (a cluster manager assigning nodes to jobs), handlers only record; one loop decides.
 *
 * Liveness: for every live node the pool holds a lease, a `holdNode` activity on the node's own
 * queue that heartbeats while the agent runs. A lease that times out marks the node lost. The
 * pool's coordinator may crash: leases, jobs and their workers run on, and the next coordinator
 * replays the pool from its history.
 */
import * as wf from '@temporalio/workflow';
import { ActivityCancellationType } from '@temporalio/workflow';
import type { PoolActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import * as p from '../src/pool/decide';
import { departSchema, initialPoolState, jobRequestSchema, registerSchema, type PoolNode, type PoolState } from '../src/pool/state';
import { lobbyBatchSignal } from './messages';
import { continueAsNewOnCurrent, listenForWake, targetChanged } from './upgrade';
import { poolDepartSignal, poolGrantSignal, poolJobSignal, poolNodeQuery, poolRegisterSignal, poolStatusQuery } from './pool-messages';

export interface PoolInput {
  name: string;
  /** Carried across continue-as-new. */
  state?: PoolState;
}

/** Signals one run takes before it continues as new (Temporal allows 10,000 per run). */
const SIGNALS_PER_RUN = 2000;

function lease(n: PoolNode): PoolActivities {
  return wf.proxyActivities<PoolActivities>({
    taskQueue: nodeQueue(n.nodeId),
    // The agent polls its queue from the moment it registers: a lease nobody picks up is a dead agent.
    scheduleToStartTimeout: n.heartbeatTimeoutMs,
    heartbeatTimeout: n.heartbeatTimeoutMs,
    startToCloseTimeout: '3650 days',
    retry: { maximumAttempts: 1 },
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    summary: `lease on ${n.nodeId}`,
  });
}

export async function nodePool(input: PoolInput): Promise<void> {
  let state: PoolState = input.state ?? initialPoolState(input.name);
  let signals = 0;
  let dirty = true;
  const leaves: p.Leave[] = [];
  const now = () => Date.now();
  const change = (next: PoolState) => {
    dirty = dirty || next !== state;
    state = next;
  };

  listenForWake(); // [upgrade]
  wf.setHandler(poolStatusQuery, () => state);
  wf.setHandler(poolNodeQuery, (nodeId) => p.poolNodeView(state, nodeId));
  wf.setHandler(poolRegisterSignal, (req) => {
    signals++;
    const r = registerSchema.safeParse(req);
    if (r.success) change(p.register(state, r.data, now()));
    else wf.log.warn('pool: register refused', { error: r.error.issues[0]?.message });
  });
  wf.setHandler(poolDepartSignal, (req) => {
    signals++;
    const r = departSchema.safeParse(req);
    if (!r.success) return;
    const d = p.depart(state, r.data, now());
    if (d.leave) leaves.push(d.leave);
    change(d.state);
  });
  wf.setHandler(poolJobSignal, (req) => {
    signals++;
    const r = jobRequestSchema.safeParse(req);
    if (r.success) change(p.jobRequest(state, r.data, now()));
    else wf.log.warn('pool: job request refused', { error: r.error.issues[0]?.message });
  });

  // One lease per live node's agent run, keyed by node id; a new incarnation replaces it.
  const leases = new Map<string, { incarnation: string; scope: wf.CancellationScope }>();
  const reconcileLeases = () => {
    const live = new Map(state.nodes.filter((n) => n.state !== 'lost').map((n) => [n.nodeId, n]));
    for (const [nodeId, l] of leases) {
      if (live.get(nodeId)?.incarnation !== l.incarnation) {
        l.scope.cancel();
        leases.delete(nodeId);
      }
    }
    for (const n of live.values()) {
      if (leases.has(n.nodeId)) continue;
      const scope = new wf.CancellationScope();
      leases.set(n.nodeId, { incarnation: n.incarnation, scope });
      const { nodeId, incarnation } = n;
      // However the lease ends, unless the pool cancelled it, that run of the agent is gone.
      const ended = () => {
        if (scope.consideredCancelled) return;
        if (leases.get(nodeId)?.scope === scope) leases.delete(nodeId);
        change(p.leaseLost(state, nodeId, incarnation, now()));
      };
      scope.run(() => lease(n).holdNode({ pool: state.name, nodeId, incarnation })).then(ended, ended);
    }
  };

  for (;;) {
    await wf.condition(() => dirty || leaves.length > 0 || targetChanged()); // [upgrade] woken by the `wake` signal
    dirty = false;
    reconcileLeases();
    const { state: next, grants } = p.allocate(state, now());
    state = next;
    await Promise.all([
      ...grants.map(async (g) => {
        try {
          await wf.getExternalWorkflowHandle(g.jobId).signal(poolGrantSignal, { pool: state.name, nodes: g.nodes });
        } catch (err) {
          // The job ended (or was never started) without saying so: its grants come back.
          wf.log.warn('pool: job did not take its grant; nodes freed', { job: g.jobId, error: String(err) });
          change(p.jobGone(state, g.jobId, now()));
        }
      }),
      ...leaves.splice(0).map((l) =>
        wf
          .getExternalWorkflowHandle(l.jobId)
          .signal(lobbyBatchSignal, [{ kind: 'leave', req: { nodeId: l.nodeId, reason: 'agent left the pool' } }])
          .catch(() => change(p.jobGone(state, l.jobId, now()))),
      ),
    ]);
    // [upgrade] A newer build current: the next run starts on it (workflows/upgrade.ts).
    if ((wf.workflowInfo().continueAsNewSuggested || signals >= SIGNALS_PER_RUN || targetChanged()) && !dirty && leaves.length === 0) {
      await wf.condition(wf.allHandlersFinished);
      // Leases end with this run (their heartbeats find it closed); the next run holds new ones.
      await continueAsNewOnCurrent<typeof nodePool>({ name: state.name, state });
    }
  }
}
