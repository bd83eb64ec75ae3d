/**
 * Pure mapping from what a controller samples (job and pool status objects, at an interval) to
 * metric values. A job's status is a snapshot; restarts by cause, recovery times and goodput are
 * about what happened between snapshots, so each job carries a small `JobTrack` from one sample
 * to the next. Times come from the sampler's clock: a transition is placed half-way between the
 * two samples that saw it, so a recovery time is within ± one sample interval.
 */
import type { JobStatus } from '../job/status';
import type { PoolNodeState, PoolState } from '../pool/state';

/** Why a job restarted: its root cause as the status shows it. */
export type RestartCause = 'node_lost' | 'worker_killed' | 'worker_exit' | 'unknown';
export const RESTART_CAUSES: readonly RestartCause[] = ['node_lost', 'worker_killed', 'worker_exit', 'unknown'];

export type JobSample = Pick<JobStatus, 'jobId' | 'state' | 'round' | 'restarts' | 'worldSize' | 'lastFailure'> & { pool?: string };

export interface JobTrack {
  /** Sampler time (ms) of the previous sample. */
  at: number;
  state: JobSample['state'];
  restarts: number;
  /** When the workers last stopped running (estimated), and the restart count then; null while running. */
  stoppedAt: number | null;
  restartsWhenStopped: number;
  runningMs: number;
  observedMs: number;
}

export interface JobStep {
  track: JobTrack;
  /** Restarts counted since the previous sample, under their cause. */
  restarts: { cause: RestartCause; count: number } | null;
  /** Seconds from a failure to the workers running again, when this sample saw them back. */
  recoverySeconds: number | null;
  /** Seconds since the previous sample spent running, and in all (both capped by `maxGapMs`). */
  runningSeconds: number;
  observedSeconds: number;
  /** Running time over observed time, 0..1 (0 before any time was observed). */
  goodput: number;
}

export function restartCause(f: JobSample['lastFailure']): RestartCause {
  if (!f) return 'unknown';
  if (f.rank === null) return 'node_lost';
  return f.signal ? 'worker_killed' : 'worker_exit';
}

/**
 * One sample of one job. `prev` is undefined the first time this process sees the job: its
 * earlier restarts are not counted (telastic_job_restarts has the job's own total), and its
 * time is observed from now on. A gap longer than `maxGapMs` (a stalled sampler) counts as
 * `maxGapMs`, so that a pause of the controller is not booked as training or as downtime.
 */
export function stepJob(prev: JobTrack | undefined, s: JobSample, now: number, maxGapMs: number): JobStep {
  if (!prev) {
    const track: JobTrack = { at: now, state: s.state, restarts: s.restarts, stoppedAt: null, restartsWhenStopped: s.restarts, runningMs: 0, observedMs: 0 };
    return { track, restarts: null, recoverySeconds: null, runningSeconds: 0, observedSeconds: 0, goodput: 0 };
  }
  const dt = Math.min(Math.max(0, now - prev.at), maxGapMs);
  // Stopped and running again between two running samples: half the gap is the downtime estimate
  // (as for the recovery below), so that a fast recovery is not booked as training.
  const between = prev.state === 'running' && s.state === 'running' && s.restarts > prev.restarts;
  const ranMs = prev.state === 'running' ? dt - (between ? dt / 2 : 0) : 0;
  const runningMs = prev.runningMs + ranMs;
  const observedMs = prev.observedMs + dt;
  const midpoint = prev.at + (now - prev.at) / 2;
  let { stoppedAt, restartsWhenStopped } = prev;
  let recoverySeconds: number | null = null;
  if (prev.state === 'running' && s.state !== 'running') {
    stoppedAt = midpoint;
    restartsWhenStopped = prev.restarts;
  } else if (s.state === 'running' && prev.state !== 'running') {
    // Only a failure's interruption is a recovery; a join, drain or scale costs no restart.
    if (stoppedAt !== null && s.restarts > restartsWhenStopped) recoverySeconds = (midpoint - stoppedAt) / 1000;
    stoppedAt = null;
  } else if (between) {
    // Stopped and running again between two samples (a fast recovery, or a late sample): it took
    // less than the gap; half of it is the estimate, as the midpoints give everywhere else.
    recoverySeconds = (now - prev.at) / 2 / 1000;
  }
  const added = s.restarts - prev.restarts;
  const track: JobTrack = { at: now, state: s.state, restarts: s.restarts, stoppedAt, restartsWhenStopped, runningMs, observedMs };
  return {
    track,
    restarts: added > 0 ? { cause: restartCause(s.lastFailure), count: added } : null,
    recoverySeconds,
    runningSeconds: ranMs / 1000,
    observedSeconds: dt / 1000,
    goodput: observedMs > 0 ? runningMs / observedMs : 0,
  };
}

export const POOL_NODE_STATES: readonly PoolNodeState[] = ['free', 'granted', 'draining', 'lost'];

export interface PoolValues {
  nodes: Record<PoolNodeState, number>;
  /** Jobs holding fewer nodes than their minimum: they wait for the pool. */
  jobsWaiting: number;
}

export function poolValues(p: Pick<PoolState, 'nodes' | 'jobs'>): PoolValues {
  const nodes = Object.fromEntries(POOL_NODE_STATES.map((st) => [st, p.nodes.filter((n) => n.state === st).length])) as Record<PoolNodeState, number>;
  const held = (jobId: string) => p.nodes.filter((n) => n.jobId === jobId && (n.state === 'granted' || n.state === 'draining')).length;
  return { nodes, jobsWaiting: p.jobs.filter((j) => held(j.jobId) < j.minNodes).length };
}
