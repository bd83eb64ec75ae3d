/**
 * `telastic controller`: a worker on the control queue only, for deployments where
 * coordination should not live on GPU nodes. Run one or more; any of them replays a job.
 */
import type { NativeConnection } from '@temporalio/worker';
import os from 'node:os';
import { createControlWorker } from './temporal/workers';

export interface Controller {
  shutdown(): Promise<void>;
  /** Settles when the worker stopped. */
  done: Promise<void>;
}

export async function startController(connection: NativeConnection, namespace: string, taskQueue: string): Promise<Controller> {
  const worker = await createControlWorker(connection, namespace, taskQueue, `controller-${os.hostname()}-${process.pid}`);
  const done = worker.run();
  return {
    done,
    async shutdown() {
      worker.shutdown();
      await done;
    },
  };
}
