/**
 * The pool agent behind `telastic agent`: one long-lived process per node. It serves its node's
 * task queue (the node activities, for whichever job its pool grants it, and the pool's lease),
 * registers with the pool, and follows its node's state until it is stopped. Jobs come and go:
 * a failed or cancelled job, or a Temporal outage, changes nothing for the agent. SIGTERM
 * leaves the pool: the job it serves re-forms without it, then the agent exits 0.
 */
import type { Connection } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { createNodeActivities } from '../../activities/node';
import { createPoolActivities } from '../../activities/pool';
import { nodeQueue } from '../../activities/types';
import { createCheckpointActivities } from '../checkpoints';
import { checkCanOpen } from '../client/api';
import { departFromPool, jobRunning, poolNodeState, registerWithPool, reportJobEnded } from '../client/pool';
import type { Launch } from '../job/assignment';
import type { PoolNodeView } from '../pool/decide';
import { poolWorkflowId, type RegisterRequest } from '../pool/state';
import { log } from '../log';
import { abortableSleep } from '../temporal/retry';
import type { Sealing } from '../temporal/data-converter';
import { SealedPayloadError } from '../temporal/sealing';
import { createControlWorker, createNodeWorker } from '../temporal/workers';
import { createReaper, killOrphans } from './workers';
import type { AgentOutcome } from './agent';
import type { OutputOptions } from './workers/types';

export interface PoolAgentOptions {
  pool: string;
  nodeId: string;
  localAddr: string;
  /** Worker processes this node runs at most (`--nproc`). */
  slots: number;
  labels: Record<string, string>;
  /** The agent's policy: null when it runs a submitted launch, else one line saying why not. */
  checkLaunch: (launch: Launch) => Promise<string | null>;
  namespace: string;
  taskQueue: string;
  /** Also host job and pool workflows (a controller's work) on this node. */
  coordinator: boolean;
  heartbeatTimeoutMs: number;
  shutdownTimeoutMs: number;
  /** What this node's workers get when a job asks for a checkpoint. @default SIGUSR1 */
  checkpointSignal?: NodeJS.Signals;
  output: OutputOptions;
  stateDir: string;
  connection: Connection;
  nativeConnection: NativeConnection;
  /** Sealed payloads (src/temporal/data-converter.ts): a payload it cannot unseal ends the agent. */
  sealing?: Sealing;
  retry?: <T>(fn: () => Promise<T>) => Promise<T>;
}

const POLL_MS = 1000;
/** Every this many polls, a granted node checks that its job still runs. */
const JOB_CHECK_EVERY = 5;
/** A register the pool has not recorded after this long is sent again (it is idempotent). */
const REREGISTER_MS = 10_000;

export async function runPoolAgent(o: PoolAgentOptions, stopSignal: AbortSignal): Promise<AgentOutcome> {
  const nodeLog = log.child({ pool: o.pool, node: o.nodeId });
  await killOrphans(o.stateDir);
  const reaper = await createReaper(o.stateDir);
  const incarnation = randomUUID();
  const node = createNodeActivities({
    nodeId: o.nodeId,
    checkLaunch: o.checkLaunch,
    bindAddress: o.localAddr,
    output: o.output,
    shutdownTimeoutMs: o.shutdownTimeoutMs,
    checkpointSignal: o.checkpointSignal,
    baseEnv: process.env,
    runDir: path.join(o.stateDir, 'errors', o.nodeId),
    reaper,
    log: nodeLog,
  });
  const activities = { ...node.activities, ...createCheckpointActivities({ log: nodeLog }), ...createPoolActivities(incarnation) };
  const identity = `${o.nodeId}@${os.hostname()}`;
  const dataConverter = o.sealing?.dataConverter;
  const workers: Worker[] = [await createNodeWorker(o.nativeConnection, o.namespace, nodeQueue(o.nodeId), activities, identity, dataConverter)];
  if (o.coordinator) workers.push(await createControlWorker(o.nativeConnection, o.namespace, o.taskQueue, identity, dataConverter));
  const running = workers.map((w) => w.run());
  const opts = { connection: o.connection, namespace: o.namespace, taskQueue: o.taskQueue, dataConverter };
  // A pool or job sealed with a key this node lacks: its tasks would fail here for ever; stop instead.
  let unsealable: Error | undefined;
  const stopAll = new AbortController();
  if (stopSignal.aborted) stopAll.abort();
  else stopSignal.addEventListener('abort', () => stopAll.abort(), { once: true });
  void o.sealing?.unsealable.then((err) => {
    unsealable = err;
    stopAll.abort();
  });
  const retry = o.retry ?? (<T>(fn: () => Promise<T>) => fn());
  const req: RegisterRequest = { nodeId: o.nodeId, address: o.localAddr, slots: o.slots, labels: o.labels, incarnation, heartbeatTimeoutMs: o.heartbeatTimeoutMs };
  const view = () => o.connection.withDeadline(Date.now() + 5000, () => poolNodeState(opts, o.pool, o.nodeId)).catch(() => null);
  try {
    // A pool sealed with a key this node lacks: say so now, before the pool counts the node (its
    // register would be the pool's one plain payload, and a job granted the node would re-form twice).
    const unopenable = await retry(() => checkCanOpen(opts, poolWorkflowId(o.pool))).then(() => null, (err: unknown) => (err instanceof SealedPayloadError ? err : Promise.reject(err)));
    if (unopenable) return { code: 1, summary: `pool ${o.pool}: ${unopenable.message}` };
    await retry(() => registerWithPool(opts, o.pool, req));
    let registeredAt = Date.now();
    console.error(`telastic agent: node ${o.nodeId} (${o.slots} slot(s)) registered with pool ${o.pool}`);
    let last: PoolNodeView | null = null;
    let polls = 0;
    while (!stopAll.signal.aborted) {
      await abortableSleep(POLL_MS, stopAll.signal);
      if (stopAll.signal.aborted) break;
      const askedAt = Date.now();
      const v = await view();
      if (!v) continue; // no coordinator or no server right now: the agent waits, its workers run on
      const mine = v.incarnation === incarnation;
      if (mine && (v.state !== last?.state || v.jobId !== last?.jobId)) {
        console.error(`telastic agent: node ${o.nodeId}: ${v.state === 'granted' ? `granted to job ${v.jobId}` : v.state}`);
      }
      if (mine) {
        last = v;
        // Workers of a job that no longer holds the node (its rounds stop them; this is the backstop).
        await node.stopStale(v.jobId, askedAt, 'the node is no longer granted to their job');
        if (v.jobId && ++polls % JOB_CHECK_EVERY === 0) await checkJob(v.jobId);
      }
      // Lost (a job lost it, or the lease lapsed) while alive, or not recorded yet: offer it again.
      if ((mine && v.state === 'lost') || (!mine && Date.now() - registeredAt > REREGISTER_MS)) {
        await registerWithPool(opts, o.pool, req).catch((err) => nodeLog.warn({ err: String(err) }, 'register failed'));
        registeredAt = Date.now();
      }
    }
    if (unsealable) return { code: 1, summary: `pool ${o.pool}: ${unsealable.message}` };
    await leave();
    return { code: 0, summary: `node ${o.nodeId} left pool ${o.pool}` };
  } finally {
    await node.stopAll('agent exiting');
    for (const w of workers) w.shutdown();
    await Promise.allSettled(running);
    await reaper.close();
  }

  /** A job terminated from outside telastic never gives its nodes back itself: say it for it. */
  async function checkJob(jobId: string): Promise<void> {
    const running = await o.connection.withDeadline(Date.now() + 5000, () => jobRunning(opts, jobId)).catch(() => true);
    if (running) return;
    console.error(`telastic agent: node ${o.nodeId}: job ${jobId} has ended; telling pool ${o.pool}`);
    await reportJobEnded(opts, o.pool, jobId).catch((err) => nodeLog.warn({ err: String(err) }, 'report failed'));
  }

  /**
   * A graceful leave: the pool tells the job the node serves, which re-forms without it at once;
   * the agent waits until the pool let the node go (bounded), so that its workers' stop is not
   * mistaken for a lost node.
   */
  async function leave(): Promise<void> {
    const sent = await departFromPool(opts, o.pool, { nodeId: o.nodeId, incarnation }).then(() => true, () => false);
    const deadline = Date.now() + o.shutdownTimeoutMs + 5000;
    while (sent && Date.now() < deadline) {
      const v = await view();
      if (v && (v.incarnation !== incarnation || v.state === 'unknown')) return;
      await abortableSleep(200);
    }
  }
}
