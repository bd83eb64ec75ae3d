/**
 * `telastic controller`: a worker on the control queue only, for deployments where
 * coordination should not live on GPU nodes. Run one or more; any of them replays a job.
 */
import { Worker, type NativeConnection } from '@temporalio/worker';
import os from 'node:os';
import type pg from 'pg';
import { createLedgerActivities } from '../activities/ledger';
import { LEDGER_QUEUE } from '../activities/types';
import { createControlWorker } from './temporal/workers';

export interface Controller {
  shutdown(): Promise<void>;
  /** Settles when the worker stopped. */
  done: Promise<void>;
}

/**
 * With `ledger` (a migrated pool on DATABASE_URL) the controller also serves the ledger queue:
 * jobs started while one runs record their rounds, failures and checkpoints (workflows/ledger.ts).
 */
export async function startController(connection: NativeConnection, namespace: string, taskQueue: string, ledger?: pg.Pool): Promise<Controller> {
  const identity = `controller-${os.hostname()}-${process.pid}`;
  const workers = [await createControlWorker(connection, namespace, taskQueue, identity)];
  if (ledger) workers.push(await Worker.create({ connection, namespace, taskQueue: LEDGER_QUEUE, identity, activities: createLedgerActivities(ledger) }));
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  return {
    done,
    async shutdown() {
      for (const w of workers) w.shutdown();
      await done;
      await ledger?.end();
    },
  };
}
