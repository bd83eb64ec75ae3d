/**
 * The controller's job and pool sampler: every `intervalMs` it lists the running job and pool
 * workflows through visibility (bounded: at most `maxJobs` jobs and `maxPools` pools) and asks
 * each for its status, a few at a time, each within a deadline. Scrapes read what the last
 * sample set, so a scrape costs Temporal nothing however often Prometheus comes.
 */
import { Client, type Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { statusQuery } from '../../workflows/messages';
import { poolStatusQuery } from '../../workflows/pool-messages';
import type { JobStatus } from '../job/status';
import type { PoolState } from '../pool/state';
import { abortableSleep } from '../temporal/retry';
import { POOL_NODE_STATES, RESTART_CAUSES, poolValues, stepJob, type JobTrack } from './jobs';
import { JOB_PHASES, type TelasticMetrics } from './registry';

export interface SamplerOptions {
  connection: Connection;
  namespace: string;
  dataConverter?: DataConverter;
  /** @default 5000 (TELASTIC_METRICS_INTERVAL seconds) */
  intervalMs: number;
  /** @default 200 (TELASTIC_METRICS_MAX_JOBS) */
  maxJobs: number;
  maxPools?: number;
}

const QUERY_DEADLINE_MS = 3000;
const CONCURRENCY = 8;

export function startSampler(m: TelasticMetrics, o: SamplerOptions): { stop(): Promise<void> } {
  const client = new Client({ connection: o.connection, namespace: o.namespace, dataConverter: o.dataConverter, identity: `telastic-metrics-${process.pid}` });
  const tracks = new Map<string, { track: JobTrack; pool: string }>();
  const pools = new Set<string>();
  const stop = new AbortController();

  async function list(query: string, max: number): Promise<string[]> {
    const ids: string[] = [];
    for await (const w of client.workflow.list({ query, pageSize: Math.min(max, 1000) })) {
      ids.push(w.workflowId);
      if (ids.length >= max) break;
    }
    return ids;
  }

  async function ask<T>(id: string, query: typeof statusQuery | typeof poolStatusQuery): Promise<T | null> {
    return o.connection.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => client.workflow.getHandle(id).query(query as never) as Promise<T>).catch(() => {
      m.sampler.errors.inc();
      return null; // no coordinator now, or the job just ended: its series stay as they were
    });
  }

  async function inBatches<T>(ids: string[], fn: (id: string) => Promise<T>): Promise<T[]> {
    const out: T[] = [];
    for (let i = 0; i < ids.length; i += CONCURRENCY) out.push(...(await Promise.all(ids.slice(i, i + CONCURRENCY).map(fn))));
    return out;
  }

  async function sample(): Promise<void> {
    const poolIds = await list(`WorkflowType = 'nodePool' AND ExecutionStatus = 'Running'`, o.maxPools ?? 50);
    const poolStates = (await inBatches(poolIds, (id) => ask<PoolState>(id, poolStatusQuery))).filter((p): p is PoolState => p !== null);
    const poolOf = new Map<string, string>();
    for (const p of poolStates) {
      const v = poolValues(p);
      for (const st of POOL_NODE_STATES) m.pool.nodes.set({ pool: p.name, state: st }, v.nodes[st]);
      m.pool.jobsWaiting.set({ pool: p.name }, v.jobsWaiting);
      for (const j of p.jobs) poolOf.set(j.jobId, p.name);
      pools.add(p.name);
    }
    for (const name of [...pools]) if (!poolStates.some((p) => p.name === name) && !poolIds.includes(`pool/${name}`)) forgetPool(name);

    const jobIds = await list(`WorkflowType = 'elasticJob' AND ExecutionStatus = 'Running'`, o.maxJobs);
    m.sampler.jobs.set(jobIds.length);
    const statuses = await inBatches(jobIds, (id) => ask<JobStatus>(id, statusQuery));
    const now = Date.now();
    statuses.forEach((s, i) => {
      const id = jobIds[i];
      if (s) record(s, poolOf.get(id) ?? tracks.get(id)?.pool ?? '', now);
    });
    for (const id of [...tracks.keys()]) if (!jobIds.includes(id)) forgetJob(id);
  }

  function record(s: JobStatus, pool: string, now: number): void {
    const labels = { job_id: s.jobId, pool };
    const prev = tracks.get(s.jobId);
    if (prev && prev.pool !== pool) forgetJob(s.jobId);
    const step = stepJob(prev?.pool === pool ? prev.track : undefined, s, now, 3 * o.intervalMs);
    tracks.set(s.jobId, { track: step.track, pool });
    for (const st of JOB_PHASES) m.job.state.set({ ...labels, state: st }, st === s.state ? 1 : 0);
    m.job.worldSize.set(labels, s.state === 'running' ? s.worldSize : 0);
    m.job.round.set(labels, s.round);
    m.job.restarts.set(labels, s.restarts);
    if (step.restarts) m.job.restartsByCause.inc({ ...labels, cause: step.restarts.cause }, step.restarts.count);
    if (step.recoverySeconds !== null) m.job.recovery.observe(labels, step.recoverySeconds);
    m.job.runningSeconds.inc(labels, step.runningSeconds);
    m.job.observedSeconds.inc(labels, step.observedSeconds);
    m.job.goodput.set(labels, step.goodput);
  }

  /** A job no longer running: its series go (Prometheus marks them stale). */
  function forgetJob(id: string): void {
    const t = tracks.get(id);
    tracks.delete(id);
    if (!t) return;
    const labels = { job_id: id, pool: t.pool };
    for (const metric of [m.job.worldSize, m.job.round, m.job.restarts, m.job.recovery, m.job.runningSeconds, m.job.observedSeconds, m.job.goodput]) metric.remove(labels);
    for (const st of JOB_PHASES) m.job.state.remove({ ...labels, state: st });
    for (const cause of RESTART_CAUSES) m.job.restartsByCause.remove({ ...labels, cause });
  }

  function forgetPool(name: string): void {
    pools.delete(name);
    for (const st of POOL_NODE_STATES) m.pool.nodes.remove({ pool: name, state: st });
    m.pool.jobsWaiting.remove({ pool: name });
  }

  const loop = (async () => {
    while (!stop.signal.aborted) {
      await sample().catch(() => m.sampler.errors.inc()); // Temporal unavailable: the next sample tries again
      await abortableSleep(o.intervalMs, stop.signal);
    }
  })();
  return {
    async stop() {
      stop.abort();
      await loop;
    },
  };
}
