/**
 * Temporal workers of telastic. Timing options are set deliberately: they add straight to the
 * time it takes to notice a failure and recover from it.
 */
import { ApplicationFailure, type DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, bundleWorkflowCode, type ActivityInterceptors } from '@temporalio/worker';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { log } from '../log';
import { isSealing } from './data-converter';
import { claimCurrentVersion, versionName, workerVersion } from './deployment';
import { refusalOf } from './refused-payload';

/**
 * An activity whose input the codec refused (unsealed, sealed for another namespace: sealing.ts)
 * fails before it runs, non-retryably, with the codec's line: nothing on the node is touched.
 */
export function refuseRefusedInput(): ActivityInterceptors {
  return {
    inbound: {
      async execute(input, next) {
        for (const arg of input.args) {
          const refused = refusalOf(arg);
          if (refused !== null) throw ApplicationFailure.nonRetryable(refused, 'RefusedPayload');
        }
        return next(input);
      },
    },
  };
}

/**
 * Prebundled workflow code (npm run build); tests running from sources bundle on the fly (with
 * the DataConverter's failure converter). A sealing worker needs the bundle whose failure
 * converter seals failure messages (workflow-bundle-sealed.js).
 */
async function workflowCode(dataConverter: DataConverter | undefined): Promise<string> {
  const codePath = path.join(__dirname, '..', '..', isSealing(dataConverter) ? 'workflow-bundle-sealed.js' : 'workflow-bundle.js');
  if (existsSync(codePath) && __filename.endsWith('.js')) return readFileSync(codePath, 'utf8');
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    failureConverterPath: dataConverter?.failureConverterPath,
    payloadConverterPath: dataConverter?.payloadConverterPath,
  });
  return code;
}

export const TIMING = {
  /** A workflow task sticky to a dead or frozen coordinator moves to another after this. */
  stickyQueueScheduleToStartTimeout: '1s',
  /** Heartbeats (and so cancellations) reach the server at least this often. */
  maxHeartbeatThrottleInterval: '1s',
  defaultHeartbeatThrottleInterval: '1s',
  /**
   * How long one workflow activation may run before the SDK ends it (its "deadlock" timeout, 5 s by
   * default, wall-clock). On an agent starved of CPU (64 agents on 2 cores) a few-millisecond
   * activation overran 5 s, and the SDK's vm timeout, firing inside an async context, left Node's
   * async-hook stack corrupt: Node aborts the whole agent (`async hook stack has become
   * corrupted`, temporalio/sdk-typescript#939; reproduced in test/temporal/isolate-timeout.test.ts).
   * telastic's activations take milliseconds; a minute is starvation no job survives anyway.
   */
  isolateExecutionTimeout: '60s',
} as const;

/**
 * What every workflow Worker of telastic's is created with. `isolateExecutionTimeout` is not in
 * the SDK's typed options ("not exposed at the moment") but Worker.create reads it;
 * test/temporal/isolate-timeout.test.ts creates its Worker with these and fails if it stops.
 */
export const WORKFLOW_WORKER_OPTIONS = {
  stickyQueueScheduleToStartTimeout: TIMING.stickyQueueScheduleToStartTimeout,
  isolateExecutionTimeout: TIMING.isolateExecutionTimeout,
};

/** How long a control worker may take to find out (and set) its deployment's current build. */
const CLAIM_MS = 15_000;

export async function createControlWorker(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  identity?: string,
  dataConverter?: DataConverter,
): Promise<Worker> {
  // The code is read first: the build id is its hash (src/temporal/deployment.ts).
  const code = await workflowCode(dataConverter);
  const version = workerVersion(taskQueue, code);
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    identity,
    dataConverter,
    workflowBundle: { code },
    // Pinned: a job's history is only ever replayed by the code that wrote it; it moves to a
    // newer build by continuing as new (workflows/upgrade.ts, docs/upgrading.md).
    workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'PINNED' },
    ...WORKFLOW_WORKER_OPTIONS,
  });
  // Bounded: a loaded or stopping server must not hold the worker's start (and `telastic dev`'s
  // Ctrl-C behind it). A build that could not claim says how to make it current by hand.
  const makeCurrent = `temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId}`;
  const claim = await connection
    .withDeadline(Date.now() + CLAIM_MS, () => claimCurrentVersion(connection.workflowService, namespace, taskQueue, version))
    .catch((err: Error) => void log.warn({ version: versionName(version), error: err.message }, `could not check which build of the deployment is current; if new jobs do not start, make this one current: ${makeCurrent}`));
  if (!claim) return worker;
  if (claim.made === 'current') log.info({ version: versionName(version), previous: claim.previous }, 'this build is now the current version of its deployment');
  else if (claim.current !== versionName(version)) {
    log.warn({ version: versionName(version), current: claim.current }, `new jobs run on the current build; make this one current: ${makeCurrent}`);
  }
  return worker;
}

/** Activity long polls per node Worker (see createNodeWorker); the scale benchmark's simulated nodes use it too. */
export const NODE_POLLERS = 2;

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
    interceptors: { activity: [refuseRefusedInput] },
    // Two long polls per node, not the SDK's default of about 10: a node runs at most a prepare, a
    // runWorkers and a checkpoint lookup at once, and one frontend serves 1,200 polls per API
    // (10 per node stopped a 256-node job from forming, docs/scale.md).
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: NODE_POLLERS },
    maxHeartbeatThrottleInterval: TIMING.maxHeartbeatThrottleInterval,
    defaultHeartbeatThrottleInterval: TIMING.defaultHeartbeatThrottleInterval,
    shutdownGraceTime: '5s',
  });
}
