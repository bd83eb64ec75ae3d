/** A controller's metrics (`telastic controller`, `telastic dev`): readiness and the job and pool sampler. */
import type { Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { temporalReadiness, type MetricsEndpoint } from './endpoint';
import { startSampler } from './sampler';

export interface ControlMetricsInput {
  native: NativeConnection;
  /** A client connection for the sampler's list and status queries. */
  connection: Connection;
  namespace: string;
  dataConverter?: DataConverter;
  workers: readonly Worker[];
}

export function watchControl(e: MetricsEndpoint, i: ControlMetricsInput): { stop(): Promise<void> } {
  e.setReady(temporalReadiness(i.native, () => i.workers));
  const sampler = startSampler(e.metrics, { connection: i.connection, namespace: i.namespace, dataConverter: i.dataConverter, intervalMs: e.options.intervalMs, maxJobs: e.options.maxJobs });
  return {
    async stop() {
      e.setReady(async () => 'stopping');
      await sampler.stop();
    },
  };
}
