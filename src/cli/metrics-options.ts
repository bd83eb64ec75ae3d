/**
 * `--metrics-port PORT` (TELASTIC_METRICS_PORT) and `--metrics-host HOST` (TELASTIC_METRICS_HOST,
 * default 0.0.0.0) of `controller`, `agent`, `run` and `dev`. All interfaces by default: the
 * endpoint is asked for to be scraped, and Prometheus runs on another host or container (a
 * loopback-only default would look fine locally and answer nothing in compose or Kubernetes).
 * It serves read-only figures and job ids, nothing that changes a job; `--metrics-host
 * 127.0.0.1` keeps it on the machine. The SDK's own exporter is always on loopback (src/metrics/endpoint.ts).
 */
import { Option, type Command } from 'commander';
import { flagOrEnv } from './connection-options';
import { UsageError } from './errors';
import type { MetricsOptions } from '../metrics/endpoint';

export type { MetricsOptions };


export interface MetricsFlagValues {
  metricsPort?: string;
  metricsHost?: string;
}

export function addMetricsOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--metrics-port <port>', 'serve /metrics (Prometheus), /healthz and /readyz on this port (env TELASTIC_METRICS_PORT; default: none)'))
    .addOption(new Option('--metrics-host <host>', 'address the metrics port binds (env TELASTIC_METRICS_HOST, default 0.0.0.0)'));
}

function number(raw: { raw: string; from: string }, min: number, max: number, what: string): number {
  const n = Number(raw.raw);
  if (raw.raw.trim() === '' || !Number.isFinite(n) || n < min || n > max || (what !== 'seconds' && !Number.isInteger(n))) {
    throw new UsageError(`${raw.from} ${raw.raw}: expected ${what} from ${min} to ${max}`, raw.from, raw.raw);
  }
  return n;
}

/** Null when no metrics port is given: no endpoint, and the SDK exports nothing. */
export function compileMetricsOptions(flags: MetricsFlagValues, env: NodeJS.ProcessEnv): MetricsOptions | null {
  const port = flagOrEnv(flags.metricsPort, '--metrics-port', env, 'TELASTIC_METRICS_PORT');
  const host = flagOrEnv(flags.metricsHost, '--metrics-host', env, 'TELASTIC_METRICS_HOST');
  if (!port) {
    if (host?.from === '--metrics-host') throw new UsageError('--metrics-host: only with --metrics-port', '--metrics-host', host.raw);
    return null;
  }
  const interval = flagOrEnv(undefined, '', env, 'TELASTIC_METRICS_INTERVAL');
  const maxJobs = flagOrEnv(undefined, '', env, 'TELASTIC_METRICS_MAX_JOBS');
  return {
    port: number(port, 0, 65535, 'a port'),
    host: host?.raw.trim() || '0.0.0.0',
    intervalMs: interval ? Math.round(number(interval, 0.1, 3600, 'seconds') * 1000) : 5000,
    maxJobs: maxJobs ? number(maxJobs, 1, 10_000, 'a count') : 200,
  };
}
