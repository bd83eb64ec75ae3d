/**
 * `telastic controller`: a worker on the control queue only, for deployments where
 * coordination should not live on GPU nodes. Run one or more; any of them replays a job.
 */
import { Worker, type NativeConnection } from '@temporalio/worker';
import os from 'node:os';
import type pg from 'pg';
import { createLedgerActivities } from '../activities/ledger';
import type { QuarantinePolicy } from './ledger/quarantine';
import { LEDGER_QUEUE } from '../activities/types';
import { sealedIdentity } from './temporal/data-converter';
import { createControlWorker, refuseRefusedInput } from './temporal/workers';
import type { DataConverter } from '@temporalio/common';

export interface Controller {
  /** Its workers, for readiness (src/metrics/endpoint.ts). */
  workers: readonly Worker[];
  shutdown(): Promise<void>;
  /** Settles when the worker stopped. */
  done: Promise<void>;
}

/** The ledger a controller hosts: its database, how to close it, and the quarantine policy. */
export interface HostedLedger {
  pool: pg.Pool;
  close(): Promise<void>;
  policy: QuarantinePolicy;
}

/**
 * With `ledger` (a migrated database) the controller also serves the ledger queue: jobs started
 * while one runs record their rounds, failures and checkpoints (workflows/ledger.ts), and keep
 * quarantined nodes out. Shutting down closes the ledger.
 */
export async function startController(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  ledger?: HostedLedger,
  dataConverter?: DataConverter,
): Promise<Controller> {
  const identity = sealedIdentity(dataConverter, `controller-${process.pid}`) ?? `controller-${os.hostname()}-${process.pid}`;
  const workers = [await createControlWorker(connection, namespace, taskQueue, identity, dataConverter)];
  if (ledger) {
    const activities = createLedgerActivities(ledger.pool, ledger.policy);
    workers.push(await Worker.create({ connection, namespace, taskQueue: LEDGER_QUEUE, identity, activities, dataConverter, interceptors: { activity: [refuseRefusedInput] } }));
  }
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  return {
    done,
    workers,
    async shutdown() {
      for (const w of workers) w.shutdown();
      await done;
      await ledger?.close();
    },
  };
}
