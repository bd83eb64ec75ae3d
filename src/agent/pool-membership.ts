/**
 * `telastic agent`'s membership: a long-lived node registers with its pool and follows its
 * node's state (`poolNodeQuery`) until it is stopped. Jobs come and go: a failed or cancelled
 * job, or a Temporal outage, changes nothing for the agent. A stop leaves the pool: the job the
 * node serves re-forms without it, then the agent exits 0.
 */
import { randomUUID } from 'node:crypto';
import { createPoolActivities } from '../../activities/pool';
import { departFromPool, jobRunning, poolNodeState, registerWithPool, reportJobEnded } from '../client/pool';
import type { Launch } from '../job/assignment';
import type { LaunchCheck, LaunchPolicy } from './allow';
import type { PoolNodeView } from '../pool/decide';
import { poolWorkflowId, type RegisterRequest } from '../pool/state';
import { abortableSleep } from '../temporal/retry';
import type { Membership, RunningNode } from './runtime';

export interface PoolMembershipOptions {
  pool: string;
  /** Worker processes this node runs at most (`--nproc`). */
  slots: number;
  labels: Record<string, string>;
  /** The agent's policy (src/agent/allow.ts): why not, in one line, or the launch as it runs. */
  checkLaunch: (launch: Launch) => Promise<LaunchCheck>;
  /** `--allow` and the rest: also what every node activity's paths are held to (activity-input.ts). */
  policy: LaunchPolicy;
  heartbeatTimeoutMs: number;
  shutdownTimeoutMs: number;
}

const POLL_MS = 1000;
/** Every this many polls, a granted node checks that its job still runs. */
const JOB_CHECK_EVERY = 5;
/** A register the pool has not recorded after this long is sent again (it is idempotent). */
const REREGISTER_MS = 10_000;

export function poolMembership(o: PoolMembershipOptions): Membership {
  // This run of the agent: the pool's lease (holdNode) and its view tell runs of one node apart.
  const incarnation = randomUUID();
  const register = (node: RunningNode): RegisterRequest => ({ nodeId: node.nodeId, address: node.localAddr, slots: o.slots, labels: o.labels, incarnation, heartbeatTimeoutMs: o.heartbeatTimeoutMs });
  const view = (node: RunningNode) => node.client.connection.withDeadline(Date.now() + 5000, () => poolNodeState(node.client, o.pool, node.nodeId)).catch(() => null);
  let registeredAt = 0;
  /** What the last answered poll said of this run's node. */
  let lastView: PoolNodeView | null = null;

  return {
    what: `pool ${o.pool}`,
    logBindings: { pool: o.pool },
    runs: { checkLaunch: o.checkLaunch, shutdownTimeoutMs: o.shutdownTimeoutMs },
    activities: createPoolActivities(incarnation),
    policy: { slots: o.slots, launchPolicy: o.policy, checkLaunch: o.checkLaunch },
    // Checked before the pool counts the node: its register would be the pool's one plain
    // payload, and a job granted the node would re-form twice.
    workflowId: poolWorkflowId(o.pool),
    async join(node) {
      await node.retry(() => registerWithPool(node.client, o.pool, register(node)));
      registeredAt = Date.now();
      console.error(`telastic agent: node ${node.nodeId} (${o.slots} slot(s)) registered with pool ${o.pool}`);
    },
    async follow(node, stop) {
      let last: PoolNodeView | null = null;
      let polls = 0;
      let toldStuck: string | null = null;
      while (!stop.aborted) {
        await abortableSleep(POLL_MS, stop);
        if (stop.aborted) break;
        const askedAt = Date.now();
        const v = await view(node);
        if (!v) continue; // no coordinator or no server right now: the agent waits, its workers run on
        node.contact();
        const mine = v.incarnation === incarnation;
        if (mine && (v.state !== last?.state || v.jobId !== last?.jobId)) {
          console.error(`telastic agent: node ${node.nodeId}: ${v.state === 'granted' ? `granted to job ${v.jobId}` : v.state}`);
        }
        if (mine) {
          last = v;
          lastView = v;
          // Workers of a job that no longer holds the node (its rounds stop them; this is the backstop).
          await node.activities.stopStale(v.jobId, askedAt, 'the node is no longer granted to their job');
          if (v.jobId && ++polls % JOB_CHECK_EVERY === 0) await checkJob(node, v.jobId);
        }
        // Lost (a job lost it, or the lease lapsed) while alive, or not recorded yet: offer it again,
        // unless workers SIGKILL did not end still live here (no job could run beside them).
        const stuck = node.activities.stuck();
        if (stuck !== null && mine && v.state === 'lost') {
          if (stuck !== toldStuck) console.error(`telastic agent: ${stuck}: not offered to pool ${o.pool} again while they live`);
          toldStuck = stuck;
        } else if ((mine && v.state === 'lost') || (!mine && Date.now() - registeredAt > REREGISTER_MS)) {
          await registerWithPool(node.client, o.pool, register(node)).catch((err) => node.log.warn({ err: String(err) }, 'register failed'));
          registeredAt = Date.now();
        }
      }
      return { outcome: { code: 0, summary: `node ${node.nodeId} left pool ${o.pool}` }, leave: true };
    },
    // The pool tells the job the node serves, which re-forms without it at once.
    sendLeave: (node) => departFromPool(node.client, o.pool, { nodeId: node.nodeId, incarnation }),
    async released(node) {
      // A free node serves no job: nothing re-forms, so its leave needs no answer (and a stop of
      // the whole stack, controllers first, does not wait out leaveWaitMs here).
      if (lastView?.state === 'free' && lastView.jobId === null) return true;
      const v = await poolNodeState(node.client, o.pool, node.nodeId);
      return v.incarnation !== incarnation || v.state === 'unknown';
    },
    // The job stops the node's workers (within their shutdown timeout) before the pool lets it go.
    leaveWaitMs: o.shutdownTimeoutMs + 5000,
  };

  /** A job terminated from outside telastic never gives its nodes back itself: say it for it. */
  async function checkJob(node: RunningNode, jobId: string): Promise<void> {
    const running = await node.client.connection.withDeadline(Date.now() + 5000, () => jobRunning(node.client, jobId)).catch(() => true);
    if (running) return;
    console.error(`telastic agent: node ${node.nodeId}: job ${jobId} has ended; telling pool ${o.pool}`);
    await reportJobEnded(node.client, o.pool, jobId).catch((err) => node.log.warn({ err: String(err) }, 'report failed'));
  }
}
