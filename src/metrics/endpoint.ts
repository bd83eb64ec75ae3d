/**
 * One process's metrics: telastic's registry, the port the Temporal SDK's exporter gets (on
 * loopback, for the endpoint to append), and the HTTP endpoint, open before the process
 * connects to Temporal (so /healthz answers and /readyz says why not while it waits).
 */
import type { NativeConnection, Worker } from '@temporalio/worker';
import { freePort } from '../temporal/ports';
import { createMetrics, type TelasticMetrics } from './registry';
import { startMetricsServer, type Readiness } from './server';

/** What the CLI compiled (src/cli/metrics-options.ts). */
export interface MetricsOptions {
  /** 0 picks a free port (tests). */
  port: number;
  host: string;
  /** How often a controller samples job and pool status. */
  intervalMs: number;
  /** At most this many running jobs per sample. */
  maxJobs: number;
}

export interface MetricsEndpoint {
  metrics: TelasticMetrics;
  options: MetricsOptions;
  /** For Runtime.install's Prometheus exporter (installRuntime in src/cli/run.ts). */
  sdkBindAddress: string;
  url: string;
  /** What /readyz asks from now on. */
  setReady(r: Readiness): void;
  /** Something to refresh before each scrape. */
  onScrape(fn: () => void): void;
  close(): Promise<void>;
}

export async function openMetrics(o: MetricsOptions | null, say: (line: string) => void): Promise<MetricsEndpoint | null> {
  if (!o) return null;
  const metrics = createMetrics();
  // Picked here, bound by the SDK when the runtime is installed: another process may take it in
  // between (then the SDK's part of /metrics says it is unavailable).
  const sdkPort = await freePort('127.0.0.1');
  let ready: Readiness = async () => 'not connected to Temporal yet';
  const hooks: (() => void)[] = [];
  const server = await startMetricsServer({
    host: o.host,
    port: o.port,
    registry: metrics.registry,
    sdkUrl: `http://127.0.0.1:${sdkPort}/metrics`,
    ready: () => ready(),
    beforeScrape: () => hooks.forEach((h) => h()),
  }).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`--metrics-port ${o.port}: cannot listen on ${o.host}:${o.port} (${err.code ?? err.message})`);
  });
  say(`metrics on ${server.url}/metrics (health: /healthz, /readyz)`);
  return {
    metrics,
    options: o,
    sdkBindAddress: `127.0.0.1:${sdkPort}`,
    url: server.url,
    setReady: (r) => (ready = r),
    onScrape: (fn) => hooks.push(fn),
    close: () => server.close(),
  };
}

/**
 * Ready: Temporal answers within 2 s and every worker runs with no poller failed. The SDK keeps
 * polling (and says POLLING) through an outage, so the server is asked itself.
 */
const PING_MS = 2000;

export function temporalReadiness(native: NativeConnection, workers: () => readonly Worker[]): Readiness {
  return async () => {
    // The native connection retries an unavailable server inside the call: a timer bounds it.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${PING_MS / 1000}s`)), PING_MS)));
    try {
      await Promise.race([native.withDeadline(Date.now() + PING_MS, () => native.workflowService.getSystemInfo({})), late]);
    } catch (err) {
      return `Temporal unreachable: ${(err as Error).message.split('\n')[0]}`;
    } finally {
      clearTimeout(timer);
    }
    const ws = workers();
    if (ws.length === 0) return 'no worker started yet';
    for (const w of ws) {
      const s = w.getStatus();
      if (s.runState !== 'RUNNING') return `worker on ${w.options.taskQueue} is ${s.runState.toLowerCase()}`;
      if (s.workflowPollerState === 'FAILED' || s.activityPollerState === 'FAILED') return `worker on ${w.options.taskQueue}: a poller failed`;
    }
    return null;
  };
}
