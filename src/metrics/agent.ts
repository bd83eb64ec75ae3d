/**
 * An agent's own series (`telastic run`, `telastic agent`): the worker processes it runs and how
 * long since its job or pool last answered it, read at each scrape; and its readiness.
 */
import type { NativeConnection, Worker } from '@temporalio/worker';
import { temporalReadiness, type MetricsEndpoint } from './endpoint';

export interface AgentWatch {
  /** The agent's job or pool answered it just now. */
  contact(): void;
}

export function watchAgent(e: MetricsEndpoint | undefined, nodeId: string, native: NativeConnection, workers: readonly Worker[], workersRunning: () => number): AgentWatch {
  let lastContact = Date.now();
  if (e) {
    e.setReady(temporalReadiness(native, () => workers));
    e.onScrape(() => {
      e.metrics.agent.workersRunning.set({ node: nodeId }, workersRunning());
      e.metrics.agent.contactAge.set({ node: nodeId }, (Date.now() - lastContact) / 1000);
    });
  }
  return { contact: () => (lastContact = Date.now()) };
}
