/**
 * `telastic run`'s membership: the node starts its job's workflow (or finds it running), offers
 * itself through the job's lobby and follows the job until it ends or drains the node: the job
 * nudges the node with its fate when its part changes, and the node acts on it, or asks
 * (`nodeQuery`) when the nudge carried none it may trust. A node the job
 * dropped as lost while alive stops its workers and joins again, unless processes of its last
 * round survived SIGKILL: it exits with the line that names them.
 */
import { randomUUID } from 'node:crypto';
import { drainNode, nodeState, sendToLobby, startJob } from '../client/api';
import { agentPollMs, idleAskMs } from '../job/groups';
import type { JobSpec, JoinRequest } from '../job/spec';
import type { NodeView } from '../job/status';
import { FINAL_PHASES } from '../job/state';
import { abortableSleep } from '../temporal/retry';
import { outcomeOfFailure, type AgentOutcome } from './outcome';
import type { Membership, RunningNode } from './runtime';

export interface JobMembershipOptions {
  /** The compiled spec (parsed at the edge, src/cli/run.ts): every default is filled in. */
  spec: JobSpec;
  /** Whether the namespace has telastic's search attributes (src/temporal/readiness.ts). */
  searchAttributes: boolean;
  /** The Web UI, for a link to the job. */
  uiUrl?: string;
  /**
   * Aborted on a preemption notice (the first SIGTERM): the agent asks the job for a
   * checkpoint-first drain of this node with `leaveGraceMs`, and leaves when drained, or as on a
   * stop once the grace (and LEAVE_WAIT_MS to stop the round) has passed.
   */
  preemptSignal?: AbortSignal;
  /** @default 25000 */
  leaveGraceMs?: number;
}

/** How long a leaving node waits for the job to let it go, and a drained round to stop. */
const LEAVE_WAIT_MS = 5000;

export function jobMembership(o: JobMembershipOptions): Membership {
  const { spec } = o;
  const jobId = spec.jobId;
  const lobby = { jobId, maxNodes: spec.maxNodes, groupSize: spec.rdzv.groupSize };
  // A join sent twice by this run of the agent (a rejoin polled again before the first arrived)
  // is recognised by the job as the same one, not as an agent that restarted.
  const incarnation = randomUUID();
  const joinRequest = (node: RunningNode): JoinRequest => ({ nodeId: node.nodeId, address: node.localAddr, slots: spec.nprocPerNode, entrypoint: spec.entrypoint, role: spec.role, incarnation });
  let handle: Awaited<ReturnType<typeof startJob>> | undefined;

  return {
    what: `job ${jobId}`,
    logBindings: { job: jobId },
    runs: { entrypoint: spec.entrypoint, shutdownTimeoutMs: spec.shutdownTimeoutMs },
    workflowId: jobId,
    async start(node) {
      handle = await node.retry(() => startJob(node.client, { ...spec, searchAttributes: o.searchAttributes }));
      if (o.uiUrl) console.error(`telastic: job ${jobId}: ${o.uiUrl}/namespaces/${node.client.namespace}/workflows/${jobId}`);
    },
    async join(node) {
      await node.retry(() => sendToLobby(node.client, lobby, { kind: 'join', req: joinRequest(node) }));
      node.log.info('join sent');
    },
    async follow(node, stop) {
      const h = handle!;
      const result = node.retry(() => h.result()).then(
        (r): AgentOutcome => ({ code: 0, summary: `job ${jobId} succeeded: ${r.rounds} round(s), ${r.restarts} restart(s)` }),
        (err: unknown): AgentOutcome => outcomeOfFailure(jobId, err),
      );
      const outcome = await follow(node, stop, result);
      return { outcome, leave: outcome.code === 143 };
    },
    sendLeave: (node) => sendToLobby(node.client, lobby, { kind: 'leave', req: { nodeId: node.nodeId, reason: 'agent stopped' } }),
    async released(node) {
      const v = await nodeState(node.client, jobId, node.nodeId);
      return FINAL_PHASES.includes(v.job) || ['draining', 'left', 'drained', 'lost'].includes(v.node);
    },
    leaveWaitMs: LEAVE_WAIT_MS,
  };

  async function follow(node: RunningNode, stop: AbortSignal, result: Promise<AgentOutcome>): Promise<AgentOutcome> {
    let done = false;
    void result.finally(() => (done = true));
    const stopped = new Promise<AgentOutcome>((resolve) => {
      const onAbort = () => resolve({ code: 143, summary: `node ${node.nodeId} left job ${jobId}: agent stopped` });
      if (stop.aborted) onAbort();
      else stop.addEventListener('abort', onAbort, { once: true });
      const onPreempt = () => {
        const graceMs = o.leaveGraceMs ?? 25_000;
        node.log.info({ graceMs }, 'preemption notice: asking the job for a checkpoint before leaving');
        void node.retry(() => drainNode(node.client, jobId, node.nodeId, 2000, { checkpointFirst: true, graceMs })).catch((err) => {
          node.log.error({ err: String(err) }, 'checkpoint-first drain not sent: leaving at once');
          onAbort();
        });
        // The job releases the node after the grace at the latest; give it time to stop the round.
        setTimeout(() => !done && resolve({ code: 143, summary: `node ${node.nodeId} left job ${jobId}: not released within the ${graceMs / 1000}s grace` }), graceMs + LEAVE_WAIT_MS).unref();
      };
      if (o.preemptSignal?.aborted) onPreempt();
      else o.preemptSignal?.addEventListener('abort', onPreempt, { once: true });
    });
    const pollMs = agentPollMs(spec.maxNodes);
    const askMs = idleAskMs(spec.maxNodes);
    // The job nudges this node when it drops, drains or refuses it (workflows/nudge.ts): then the
    // node asks at once. Otherwise it asks every askMs only once the job has had it do nothing
    // for askMs (waiting, a spare, or a nudge that never came), so the job's queries grow neither
    // with the nodes that train nor at each round boundary, nor with the nodes that wait for a
    // large round to form; meanwhile a cheap check of the frontend every pollMs keeps the contact
    // metric honest.
    // A nudge holds until the job answers: a refused query (the job's workflow task was running:
    // BusyWorkflow) or a server out of reach (a cut link) is asked again after a backoff from
    // 0.5 s up to pollMs, jittered, not forgotten.
    let nudged = false;
    let unanswered = false;
    let retryMs = 0;
    let askedAt = Date.now();
    // A fate the job's own nudge carried (src/agent/nudge-fate.ts): acted on without a query.
    let told: NodeView | null = null;
    let wake = () => undefined as void;
    const offNudge = node.activities.onNudge((j, fate) => {
      if (j !== jobId) return;
      nudged = true;
      if (fate) told = { job: 'running', node: fate.node, ...(fate.reason ? { reason: fate.reason } : {}) };
      wake();
    });
    const nap = () => {
      const woken = new AbortController();
      wake = () => woken.abort();
      const onStop = () => woken.abort();
      stop.addEventListener('abort', onStop, { once: true });
      const ms = !nudged ? pollMs : unanswered ? retryMs : 0;
      return (ms === 0 ? Promise.resolve() : abortableSleep(ms, woken.signal)).finally(() => stop.removeEventListener('abort', onStop));
    };
    const watch = (async (): Promise<AgentOutcome | null> => {
      while (!done && !stop.aborted) {
        await nap();
        if (done || stop.aborted) return null;
        if (!nudged && (node.activities.idleMs() < askMs || Date.now() - askedAt < askMs)) {
          await node.client.connection.withDeadline(Date.now() + 5000, () => node.client.connection.healthService.check({})).then(() => node.contact(), () => undefined);
          continue;
        }
        askedAt = Date.now();
        const me = told ?? await node.client.connection
          .withDeadline(Date.now() + 5000, () => nodeState(node.client, jobId, node.nodeId))
          .then((v) => (FINAL_PHASES.includes(v.job) ? null : v))
          .catch(() => undefined);
        told = null;
        unanswered = me === undefined;
        retryMs = unanswered ? nextRetryMs(retryMs, pollMs) : 0;
        if (!unanswered) nudged = false;
        if (!me) continue;
        node.contact();
        if (me.node === 'rejected') return { code: 2, summary: `join rejected: ${me.reason ?? 'by the job'}` };
        if (me.node === 'drained' || me.node === 'left') return { code: 0, summary: `node ${node.nodeId} was drained from job ${jobId}` };
        if (me.node === 'lost') {
          // Taken out because it could not end its workers: it may not run another round beside them.
          const stuck = node.activities.stuck();
          if (stuck !== null) return { code: 1, summary: stuck };
          node.log.warn('this node was dropped from the job: stopping its workers and joining again');
          await node.activities.stopAll('node was dropped');
          await sendToLobby(node.client, lobby, { kind: 'join', req: joinRequest(node) }).catch((err) => node.log.error({ err: String(err) }, 'rejoin failed'));
        }
      }
      return null;
    })();
    const first = await Promise.race([result, stopped, watch.then((w) => w ?? result)]);
    done = true;
    wake();
    await watch; // no client call may still be in flight when the connection closes
    offNudge();
    return first;
  }
}

/** The wait before asking again after an unanswered ask: doubling from 0.5 s up to `maxMs`, jittered ±25 %. */
export function nextRetryMs(previousMs: number, maxMs: number): number {
  const base = Math.min(maxMs, Math.max(500, previousMs * 2));
  return Math.round(base * (0.75 + Math.random() / 2));
}
