/**
 * The node agent behind `telastic run`: one process per node. It serves its node's task queue
 * (the node activities) and, unless told not to, the control queue (job workflows), offers the
 * node to the job and follows the job until the node's part is over.
 */
import { WorkflowFailedError, type Connection } from '@temporalio/client';
import { CancelledFailure, ApplicationFailure } from '@temporalio/common';
import type { NativeConnection, Worker } from '@temporalio/worker';
import os from 'node:os';
import path from 'node:path';
import { createNodeActivities } from '../../activities/node';
import { createCheckpointActivities } from '../checkpoints';
import { nodeQueue } from '../../activities/types';
import { JobInputError, checkCanOpen, drainNode, nodeState, sendToLobby, startJob } from '../client/api';
import { SealedPayloadError } from '../temporal/sealing';
import { describeFailure } from '../job/decide';
import type { JobSpecInput, JoinRequest } from '../job/spec';
import { FINAL_PHASES, type Failure } from '../job/state';
import { DEFAULT_GROUP_SIZE, agentPollMs } from '../job/groups';
import { log } from '../log';
import type { Sealing } from '../temporal/data-converter';
import { createControlWorker, createNodeWorker } from '../temporal/workers';
import { createReaper, killOrphans } from './workers';
import type { OutputOptions } from './workers/types';

export interface AgentOptions {
  spec: JobSpecInput;
  nodeId: string;
  /** Address other nodes reach this one at (MASTER_ADDR when group rank 0). */
  localAddr: string;
  namespace: string;
  taskQueue: string;
  coordinator: boolean;
  searchAttributes: boolean;
  output: OutputOptions;
  stateDir: string;
  uiUrl?: string;
  connection: Connection;
  nativeConnection: NativeConnection;
  /** Sealed payloads (src/temporal/data-converter.ts): a payload it cannot unseal ends the agent. */
  sealing?: Sealing;
  /** Runs a Temporal call, waiting out an unavailable server (src/temporal/retry.ts). */
  retry?: <T>(fn: () => Promise<T>) => Promise<T>;
  /** What this node's workers get when the job asks for a checkpoint. @default SIGUSR1 */
  checkpointSignal?: NodeJS.Signals;
  /**
   * Aborted on a preemption notice (the first SIGTERM): the agent asks the job for a
   * checkpoint-first drain of this node with `leaveGraceMs`, and leaves when drained, or as on
   * `stopSignal` once the grace (and LEAVE_WAIT_MS to stop the round) has passed.
   */
  preemptSignal?: AbortSignal;
  /** @default 25000 */
  leaveGraceMs?: number;
}

/** How the node's part of the job ended; `code` is the process exit code. */
export interface AgentOutcome {
  code: number;
  summary: string;
}

const LEAVE_WAIT_MS = 5000;

export async function runAgent(o: AgentOptions, stopSignal: AbortSignal): Promise<AgentOutcome> {
  const jobId = o.spec.jobId;
  const nodeLog = log.child({ job: jobId, node: o.nodeId });
  await killOrphans(o.stateDir);
  const reaper = await createReaper(o.stateDir);
  const node = createNodeActivities({
    nodeId: o.nodeId,
    entrypoint: { module: false, noPython: false, ...o.spec.entrypoint },
    bindAddress: o.localAddr,
    output: o.output,
    shutdownTimeoutMs: o.spec.shutdownTimeoutMs ?? 30_000,
    checkpointSignal: o.checkpointSignal,
    baseEnv: process.env,
    runDir: path.join(o.stateDir, 'errors', o.nodeId),
    reaper,
    log: nodeLog,
  });
  const activities = { ...node.activities, ...createCheckpointActivities({ log: nodeLog }) };
  const dataConverter = o.sealing?.dataConverter;
  const workers: Worker[] = [await createNodeWorker(o.nativeConnection, o.namespace, nodeQueue(o.nodeId), activities, `${o.nodeId}@${os.hostname()}`, dataConverter)];
  if (o.coordinator) workers.push(await createControlWorker(o.nativeConnection, o.namespace, o.taskQueue, `${o.nodeId}@${os.hostname()}`, dataConverter));
  const running = workers.map((w) => w.run());

  const opts = { connection: o.connection, namespace: o.namespace, taskQueue: o.taskQueue, dataConverter };
  const req: JoinRequest = {
    nodeId: o.nodeId,
    address: o.localAddr,
    slots: o.spec.nprocPerNode,
    entrypoint: { module: false, noPython: false, ...o.spec.entrypoint },
    role: o.spec.role ?? 'default',
  };
  const lobby = { jobId, maxNodes: o.spec.maxNodes, groupSize: o.spec.rdzv?.groupSize ?? DEFAULT_GROUP_SIZE };
  const pollMs = agentPollMs(o.spec.maxNodes);
  const retry = o.retry ?? (<T>(fn: () => Promise<T>) => fn());
  try {
    const handle = await retry(() => startJob(opts, { ...o.spec, searchAttributes: o.searchAttributes }));
    if (o.uiUrl) console.error(`telastic: job ${jobId}: ${o.uiUrl}/namespaces/${o.namespace}/workflows/${jobId}`);
    // A job sealed with a key this node lacks: say so now, before the job counts on this node.
    const unopenable = await retry(() => checkCanOpen(opts, jobId)).then(() => null, (err: unknown) => (err instanceof SealedPayloadError ? err : Promise.reject(err)));
    if (unopenable) return { code: 1, summary: `job ${jobId}: ${unopenable.message}` };
    await retry(() => sendToLobby(opts, lobby, { kind: 'join', req }));
    nodeLog.info('join sent');
    return await follow();

    /**
     * A graceful leave: its workers stop only once the job knows (or after LEAVE_WAIT_MS without a
     * coordinator), so that their exit is not mistaken for a lost node.
     */
    async function leave(): Promise<void> {
      const sent = await sendToLobby(opts, lobby, { kind: 'leave', req: { nodeId: o.nodeId, reason: 'agent stopped' } }).then(() => true, () => false);
      const deadline = Date.now() + LEAVE_WAIT_MS;
      while (sent && Date.now() < deadline) {
        const v = await o.connection.withDeadline(deadline, () => nodeState(opts, jobId, o.nodeId)).catch(() => null);
        if (v && (FINAL_PHASES.includes(v.job) || ['draining', 'left', 'drained', 'lost'].includes(v.node))) return;
        await sleep(200);
      }
    }

    async function follow(): Promise<AgentOutcome> {
      let done = false;
      const result = retry(() => handle.result()).then(
        (r): AgentOutcome => ({ code: 0, summary: `job ${jobId} succeeded: ${r.rounds} round(s), ${r.restarts} restart(s)` }),
        (err: unknown): AgentOutcome => outcomeOfFailure(jobId, err),
      );
      void result.finally(() => (done = true));
      const stopped = new Promise<AgentOutcome>((resolve) => {
        const onAbort = () => resolve({ code: 143, summary: `node ${o.nodeId} left job ${jobId}: agent stopped` });
        if (stopSignal.aborted) onAbort();
        else stopSignal.addEventListener('abort', onAbort, { once: true });
        const onPreempt = () => {
          const graceMs = o.leaveGraceMs ?? 25_000;
          nodeLog.info({ graceMs }, 'preemption notice: asking the job for a checkpoint before leaving');
          void retry(() => drainNode(opts, jobId, o.nodeId, 2000, { checkpointFirst: true, graceMs })).catch((err) => {
            nodeLog.error({ err: String(err) }, 'checkpoint-first drain not sent: leaving at once');
            onAbort();
          });
          // The job releases the node after the grace at the latest; give it time to stop the round.
          setTimeout(() => !done && resolve({ code: 143, summary: `node ${o.nodeId} left job ${jobId}: not released within the ${graceMs / 1000}s grace` }), graceMs + LEAVE_WAIT_MS).unref();
        };
        if (o.preemptSignal?.aborted) onPreempt();
        else o.preemptSignal?.addEventListener('abort', onPreempt, { once: true });
      });
      const watch = (async (): Promise<AgentOutcome | null> => {
        while (!done && !stopSignal.aborted) {
          await sleep(pollMs);
          if (done || stopSignal.aborted) return null;
          const me = await o.connection
            .withDeadline(Date.now() + 5000, () => nodeState(opts, jobId, o.nodeId))
            .then((v) => (FINAL_PHASES.includes(v.job) ? undefined : v))
            .catch(() => undefined);
          if (!me) continue;
          if (me.node === 'rejected') return { code: 2, summary: `join rejected: ${me.reason ?? 'by the job'}` };
          if (me.node === 'drained' || me.node === 'left') return { code: 0, summary: `node ${o.nodeId} was drained from job ${jobId}` };
          if (me.node === 'lost') {
            nodeLog.warn('this node was dropped from the job: stopping its workers and joining again');
            await node.stopAll('node was dropped');
            await sendToLobby(opts, lobby, { kind: 'join', req }).catch((err) => nodeLog.error({ err: String(err) }, 'rejoin failed'));
          }
        }
        return null;
      })();
      // A job sealed with a key this node lacks: its tasks would fail here for ever; stop instead.
      const unsealable = new Promise<AgentOutcome>((resolve) => void o.sealing?.unsealable.then((err) => resolve({ code: 1, summary: `job ${jobId}: ${err.message}` })));
      const first = await Promise.race([result, stopped, unsealable, watch.then((w) => w ?? result)]);
      done = true;
      await watch; // no client call may still be in flight when the connection closes
      if (first.code === 143) await leave();
      return first;
    }
  } catch (err) {
    if (err instanceof JobInputError) return { code: 2, summary: `join rejected: ${err.message}` };
    throw err;
  } finally {
    await node.stopAll('agent exiting');
    for (const w of workers) w.shutdown();
    await Promise.allSettled(running);
    await reaper.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function outcomeOfFailure(jobId: string, err: unknown): AgentOutcome {
  const cause = err instanceof WorkflowFailedError ? err.cause : err;
  if (cause instanceof CancelledFailure) return { code: 1, summary: `job ${jobId} was cancelled` };
  if (cause instanceof ApplicationFailure) {
    const failure = (cause.details?.[0] as { failure?: Failure | null } | undefined)?.failure;
    const root = failure ? describeFailure(failure) : '';
    // Restarts-exhausted messages already end with the root cause; others (join timeout) add it.
    const suffix = root && !cause.message.includes(root) ? ` (root cause: ${root})` : '';
    return { code: 1, summary: `job ${jobId} failed: ${cause.message}${suffix}` };
  }
  return { code: 1, summary: `job ${jobId} failed: ${cause instanceof Error ? cause.message : String(cause)}` };
}
