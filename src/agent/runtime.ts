/**
 * The node agent's runtime, behind both `telastic run` and `telastic agent`: one process per
 * node. It serves the node's task queue (the node and checkpoint activities) and, when it is a
 * coordinator, the control queue (job and pool workflows); it offers the node, follows what the
 * node serves until its part is over, leaves gracefully when stopped, and tears it all down.
 * Only how the node joins and follows is plugged in (`Membership`), as torch's
 * SimpleElasticAgent leaves `_rendezvous` and `_monitor_workers` to its subclasses:
 * job-membership.ts (a job's lobby, `nodeQuery`) and pool-membership.ts (a pool's register,
 * `poolNodeQuery`).
 */
import type { Connection } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import os from 'node:os';
import path from 'node:path';
import { createNodeActivities, type NodeActivityHandle, type NodeDeps } from '../../activities/node';
import { nodeQueue } from '../../activities/types';
import { createCheckpointActivities } from '../checkpoints';
import { JobInputError, checkCanOpen, type ClientOptions } from '../client/api';
import { log, type Logger } from '../log';
import { sealedIdentity, type Sealing } from '../temporal/data-converter';
import { abortableSleep } from '../temporal/retry';
import { SealedPayloadError } from '../temporal/sealing';
import { createControlWorker, createNodeWorker } from '../temporal/workers';
import { checkpointDirPolicy, guardActivities, type AgentPolicy } from './activity-input';
import type { AgentOutcome } from './outcome';
import type { WorkerLaunchOptions } from './env';
import { createReaper, killOrphans } from './workers';
import type { OutputOptions } from './workers/types';
import type { HealthCheck } from './health-check';
import { watchAgent } from '../metrics/agent';
import type { MetricsEndpoint } from '../metrics/endpoint';

/** Runs a Temporal call, waiting out an unavailable server (src/temporal/retry.ts). */
export type Retry = <T>(fn: () => Promise<T>) => Promise<T>;

/** What every agent is given, whatever its node serves. */
export interface RuntimeOptions {
  nodeId: string;
  /** Address other nodes reach this one at (MASTER_ADDR when group rank 0). */
  localAddr: string;
  namespace: string;
  /** The control queue job (and pool) workflows run on. */
  taskQueue: string;
  /** Also host job and pool workflows (a controller's work) on this node. */
  coordinator: boolean;
  output: OutputOptions;
  stateDir: string;
  connection: Connection;
  nativeConnection: NativeConnection;
  /** Sealed payloads (src/temporal/data-converter.ts): a payload it cannot unseal ends the agent. */
  sealing?: Sealing;
  /** @default one attempt */
  retry?: Retry;
  /** What this node's workers get when a job asks for a checkpoint. @default SIGUSR1 */
  checkpointSignal?: NodeJS.Signals;
  /** The operator's node health check (--health-check), run in every prepare (src/agent/health-check.ts). */
  healthCheck?: HealthCheck;
  /** The process's metrics endpoint (--metrics-port): readiness and the agent's own series. */
  metrics?: MetricsEndpoint;
  /** The signal the agent was stopped by, if any: its workers are stopped with it (NodeDeps). */
  stopSignal?: () => NodeJS.Signals | undefined;
  /** `--event-log-handler console` (NodeDeps.eventLog). */
  eventLog?: (line: string) => void;
  /** torchrun's worker flags of `telastic run` (NodeDeps.workerOptions). */
  workerOptions?: WorkerLaunchOptions;
}

/** What the runtime hands its membership: the node's client, log and running activities. */
export interface RunningNode {
  nodeId: string;
  localAddr: string;
  client: ClientOptions & { namespace: string };
  retry: Retry;
  log: Logger;
  activities: NodeActivityHandle;
  /** Tell the metrics the node's job or pool answered it (its membership's poll). */
  contact(): void;
}

/** How a node joins what it serves and follows it: the part `telastic run` and `telastic agent` differ in. */
export interface Membership {
  /** What the node serves, for messages: `job J`, `pool P`. */
  what: string;
  logBindings: Record<string, string>;
  /** How the node's activities know what to run: the agent's own command line, or a policy. */
  runs: Pick<NodeDeps, 'entrypoint' | 'checkLaunch' | 'shutdownTimeoutMs'>;
  /** Activities served beside the node's own (a pool's lease on this run of the agent). */
  activities?: object;
  /** A pool agent's policy, enforced inside every activity it serves (activity-input.ts). */
  policy?: AgentPolicy;
  /** The workflow whose input this node must be able to open before it offers itself. */
  workflowId: string;
  /** Before that check: a job's nodes start its workflow (or find it running). */
  start?(node: RunningNode): Promise<void>;
  join(node: RunningNode): Promise<void>;
  /**
   * Follow until the node's part is over or `stop` aborts (the agent stopped, or a payload it
   * cannot unseal arrived); `leave`: take the node out gracefully before the workers stop.
   */
  follow(node: RunningNode, stop: AbortSignal): Promise<{ outcome: AgentOutcome; leave: boolean }>;
  /** Send the leave; it rejects when it could not be sent (nothing will let the node go then). */
  sendLeave(node: RunningNode): Promise<void>;
  /** Whether the coordinator has let the node go, so that its workers' stop is not a lost node. */
  released(node: RunningNode): Promise<boolean>;
  /** How long to wait for `released` before the workers stop anyway. */
  leaveWaitMs: number;
}

export async function runAgent(o: RuntimeOptions, m: Membership, stopSignal: AbortSignal): Promise<AgentOutcome> {
  const nodeLog = log.child({ ...m.logBindings, node: o.nodeId });
  await killOrphans(o.stateDir);
  const reaper = await createReaper(o.stateDir);
  const activities = createNodeActivities({
    nodeId: o.nodeId,
    ...m.runs,
    bindAddress: o.localAddr,
    output: o.output,
    checkpointSignal: o.checkpointSignal,
    ...(o.healthCheck ? { healthCheck: o.healthCheck } : {}),
    stopSignal: o.stopSignal,
    workerOptions: o.workerOptions,
    eventLog: o.eventLog,
    baseEnv: process.env,
    runDir: path.join(o.stateDir, 'errors', o.nodeId),
    reaper,
    log: nodeLog,
  });
  // Anyone who may start a workflow can schedule these with any input: each parses and checks
  // its input first, and the pool agent's policy holds whoever scheduled it.
  const guard = { nodeId: o.nodeId, policy: m.policy };
  const checkpoints = createCheckpointActivities({ log: nodeLog, resolveDir: checkpointDirPolicy(guard) });
  const served = guardActivities({ ...activities.activities, ...checkpoints, ...m.activities }, guard);
  const dataConverter = o.sealing?.dataConverter;
  // Plain in every history event it causes: with a key, the node id alone, no host name.
  const identity = sealedIdentity(dataConverter, o.nodeId) ?? `${o.nodeId}@${os.hostname()}`;
  const workers: Worker[] = [await createNodeWorker(o.nativeConnection, o.namespace, nodeQueue(o.nodeId), served, identity, dataConverter)];
  if (o.coordinator) workers.push(await createControlWorker(o.nativeConnection, o.namespace, o.taskQueue, identity, dataConverter));
  const running = workers.map((w) => w.run());
  const retry: Retry = o.retry ?? ((fn) => fn());
  const client = { connection: o.connection, namespace: o.namespace, taskQueue: o.taskQueue, dataConverter };
  const watch = watchAgent(o.metrics, o.nodeId, o.nativeConnection, workers, activities.workersRunning);
  const node: RunningNode = { nodeId: o.nodeId, localAddr: o.localAddr, client, retry, log: nodeLog, activities, contact: watch.contact };

  // Stopped, or sealed with a key this node lacks: its tasks would fail here for ever; stop instead.
  const stop = new AbortController();
  let unsealable: Error | undefined;
  if (stopSignal.aborted) stop.abort();
  else stopSignal.addEventListener('abort', () => stop.abort(), { once: true });
  void o.sealing?.unsealable.then((err) => {
    unsealable = err;
    stop.abort();
  });
  try {
    await m.start?.(node);
    // Say so now, before the job or pool counts on this node: admitted, it would hold a place
    // whose tasks it cannot open, and the job would re-form once it stopped.
    const unopenable = await retry(() => checkCanOpen(client, m.workflowId)).then(() => null, (err: unknown) => (err instanceof SealedPayloadError ? err : Promise.reject(err)));
    if (unopenable) return { code: 1, summary: `${m.what}: ${unopenable.message}` };
    await m.join(node);
    const { outcome, leave } = await m.follow(node, stop.signal);
    if (unsealable) return { code: 1, summary: `${m.what}: ${unsealable.message}` };
    if (leave) await leaveGracefully(o.connection, m, node);
    return outcome;
  } catch (err) {
    if (err instanceof JobInputError) return { code: 2, summary: `join rejected: ${err.message}` };
    throw err;
  } finally {
    await activities.stopAll('agent exiting');
    for (const w of workers) w.shutdown();
    await Promise.allSettled(running);
    await reaper.close();
  }
}

/**
 * Leave, then wait (bounded) until the coordinator has let the node go: its workers stop only
 * then, so that their exit is not mistaken for a lost node. Without a coordinator the wait runs
 * out and the node is noticed gone later, as any lost node.
 */
async function leaveGracefully(connection: Connection, m: Membership, node: RunningNode): Promise<void> {
  const sent = await m.sendLeave(node).then(() => true, () => false);
  const deadline = Date.now() + m.leaveWaitMs;
  while (sent && Date.now() < deadline) {
    if (await connection.withDeadline(deadline, () => m.released(node)).catch(() => false)) return;
    await abortableSleep(200);
  }
}
