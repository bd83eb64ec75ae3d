/**
 * telastic's own metrics (prom-client), all under `telastic_`. Job series are labelled `job_id`
 * (not `job`: Prometheus gives every scraped series its scrape config's `job` label and would
 * rename ours to `exported_job`) and `pool` (empty for `telastic run` jobs). Job and pool series
 * come from a controller's sampler (sampler.ts), agent series from the agent itself.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { JobPhase } from '../job/state';

export const JOB_PHASES: readonly JobPhase[] = ['waiting', 'rendezvous', 'running', 'restarting', 'succeeded', 'failed', 'cancelled'];
const JOB = ['job_id', 'pool'] as const;

export function createMetrics() {
  const registry = new Registry();
  // The process's own (CPU, memory, event-loop lag), as telastic_process_* and telastic_nodejs_*.
  collectDefaultMetrics({ register: registry, prefix: 'telastic_' });
  const r = { registers: [registry] };
  return {
    registry,
    job: {
      state: new Gauge({ ...r, name: 'telastic_job_state', help: 'Job state: 1 for the state the job is in, 0 for the others (waiting, rendezvous, running, restarting, succeeded, failed, cancelled)', labelNames: [...JOB, 'state'] }),
      worldSize: new Gauge({ ...r, name: 'telastic_job_world_size', help: 'Worker processes in the job\'s current round (WORLD_SIZE; 0 outside running)', labelNames: JOB }),
      round: new Gauge({ ...r, name: 'telastic_job_round', help: 'The job\'s current rendezvous round, from 0', labelNames: JOB }),
      restarts: new Gauge({ ...r, name: 'telastic_job_restarts', help: 'Failure restarts of the job so far (its own count; membership changes do not count)', labelNames: JOB }),
      restartsByCause: new Counter({ ...r, name: 'telastic_job_restarts_total', help: 'Failure restarts seen by this process since it first sampled the job, by root cause: node_lost (a node stopped heartbeating or answering), worker_killed (a worker died of a signal), worker_exit (a worker exited non-zero), unknown', labelNames: [...JOB, 'cause'] }),
      recovery: new Histogram({ ...r, name: 'telastic_job_recovery_seconds', help: 'Seconds from the job stopping a round for a failure (once it noticed it: a lost node after its heartbeat timeout) to its workers running again, as sampled (within one sample interval)', labelNames: JOB, buckets: [1, 2, 5, 10, 15, 20, 30, 45, 60, 120, 300, 600] }),
      runningSeconds: new Counter({ ...r, name: 'telastic_job_running_seconds_total', help: 'Seconds the job spent in state running (every worker training), as sampled by this process', labelNames: JOB }),
      observedSeconds: new Counter({ ...r, name: 'telastic_job_observed_seconds_total', help: 'Seconds this process has sampled the job, in any state; running over observed is goodput', labelNames: JOB }),
      goodput: new Gauge({ ...r, name: 'telastic_job_goodput_ratio', help: 'Goodput: the fraction (0..1) of the time since this process first sampled the job that the job spent running (workers training) rather than waiting, forming a round or restarting; for a window use rate(telastic_job_running_seconds_total[w]) / rate(telastic_job_observed_seconds_total[w])', labelNames: JOB }),
    },
    pool: {
      nodes: new Gauge({ ...r, name: 'telastic_pool_nodes', help: 'Nodes registered with the pool, by state: free, granted, draining, lost', labelNames: ['pool', 'state'] }),
      jobsWaiting: new Gauge({ ...r, name: 'telastic_pool_jobs_waiting', help: 'Jobs of the pool that hold fewer nodes than their minimum (waiting for nodes)', labelNames: ['pool'] }),
    },
    sampler: {
      jobs: new Gauge({ ...r, name: 'telastic_sampler_jobs', help: 'Running jobs the last sample covered (at most TELASTIC_METRICS_MAX_JOBS)', labelNames: [] }),
      errors: new Counter({ ...r, name: 'telastic_sampler_errors_total', help: 'Samples or status queries of the job and pool sampler that failed (Temporal unreachable, a job without a coordinator)', labelNames: [] }),
    },
    agent: {
      workersRunning: new Gauge({ ...r, name: 'telastic_agent_workers_running', help: 'Worker processes this agent runs now', labelNames: ['node'] }),
      contactAge: new Gauge({ ...r, name: 'telastic_agent_contact_age_seconds', help: 'Seconds since the agent\'s job or pool last answered it (its node query; while a round of its job runs on it, the Temporal frontend\'s health check); past the heartbeat timeout the coordinator counts the node lost', labelNames: ['node'] }),
    },
  };
}

export type TelasticMetrics = ReturnType<typeof createMetrics>;

/** Every metric family the registry exports, for the dashboard's test. */
export async function metricNames(m: TelasticMetrics): Promise<string[]> {
  return (await m.registry.getMetricsAsJSON()).map((f) => f.name);
}
