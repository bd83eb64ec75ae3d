/**
 * Temporal workers of telastic. Timing options are set deliberately: they add straight to the
 * time it takes to notice a failure and recover from it.
 */
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { isSealing } from './data-converter';

/**
 * Prebundled workflow code (npm run build); tests running from sources bundle on the fly (with
 * the DataConverter's failure converter). A sealing worker needs the bundle whose failure
 * converter seals failure messages (workflow-bundle-sealed.js).
 */
function workflowSource(dataConverter: DataConverter | undefined): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const codePath = path.join(__dirname, '..', '..', isSealing(dataConverter) ? 'workflow-bundle-sealed.js' : 'workflow-bundle.js');
  if (existsSync(codePath) && __filename.endsWith('.js')) return { workflowBundle: { codePath } };
  return { workflowsPath: require.resolve('../../workflows') };
}

export const TIMING = {
  /** A workflow task sticky to a dead or frozen coordinator moves to another after this. */
  stickyQueueScheduleToStartTimeout: '1s',
  /** Heartbeats (and so cancellations) reach the server at least this often. */
  maxHeartbeatThrottleInterval: '1s',
  defaultHeartbeatThrottleInterval: '1s',
} as const;

export async function createControlWorker(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  identity?: string,
  dataConverter?: DataConverter,
): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    identity,
    dataConverter,
    ...workflowSource(dataConverter),
    stickyQueueScheduleToStartTimeout: TIMING.stickyQueueScheduleToStartTimeout,
  });
}

export async function createNodeWorker(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  activities: object,
  identity?: string,
  dataConverter?: DataConverter,
): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    identity,
    dataConverter,
    activities,
    // Two long polls per node, not the SDK's default of about 10: a node runs at most a prepare, a
    // runWorkers and a checkpoint lookup at once, and one frontend serves 1,200 polls per API
    // (10 per node stopped a 256-node job from forming, docs/scale.md).
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: 2 },
    maxHeartbeatThrottleInterval: TIMING.maxHeartbeatThrottleInterval,
    defaultHeartbeatThrottleInterval: TIMING.defaultHeartbeatThrottleInterval,
    shutdownGraceTime: '5s',
  });
}
