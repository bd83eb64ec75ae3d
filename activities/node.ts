/**
 * Node activities, run by each node's agent on its own task queue (see activities/types.ts for
 * why they are pinned). The agent keeps at most one worker group alive per job: `prepare`
 * stops whatever an earlier round left, so a round never starts beside stale workers even
 * when a cancellation has not arrived yet.
 */
import { Context, CancelledFailure } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Launch, RoundAssignment } from '../src/job/assignment';
import type { Entrypoint } from '../src/job/spec';
import { buildCommand, buildWorkerEnv, resolvePythonExec } from '../src/agent/env';
import { startWorkerGroup } from '../src/agent/workers';
import type { OutputOptions, Reaper, WorkerGroup } from '../src/agent/workers/types';
import type { Logger } from '../src/log';
import { reservePort } from './port';
import type { NodeActivities, PrepareInput, PrepareResult, RunWorkersResult, SignalWorkersInput } from './types';
import { NOT_ALLOWED } from './types';

export interface NodeDeps {
  nodeId: string;
  /**
   * What this node runs (`telastic run`: the agent's own command line). Absent on a pool agent,
   * which runs each job's `launch` once `checkLaunch` allows it.
   */
  entrypoint?: Entrypoint;
  /** A pool agent's policy (src/agent/allow.ts): null when it runs the launch, else why not. */
  checkLaunch?: (launch: Launch) => Promise<string | null>;
  /** Host the master port is reserved on (the node's advertised address). */
  bindAddress: string;
  output: Omit<OutputOptions, 'logDir'> & { logDir?: string };
  shutdownTimeoutMs: number;
  /** What `signalWorkers` sends: --checkpoint-signal. @default SIGUSR1 */
  checkpointSignal?: NodeJS.Signals;
  baseEnv: NodeJS.ProcessEnv;
  /** Per-agent scratch directory (error files). */
  runDir: string;
  reaper?: Reaper;
  log: Logger;
  /** Called with each round's worker pids (for tests and the agent's own bookkeeping). */
  onWorkersStarted?: (a: RoundAssignment, pids: number[]) => void;
  /**
   * Starts a round's worker group. @default startWorkerGroup (real processes). The scale
   * benchmark (bench/scale-sim.ts) passes stand-in groups to run many nodes in one process.
   */
  startGroup?: typeof startWorkerGroup;
}

export interface NodeActivityHandle {
  activities: Omit<NodeActivities, 'findCheckpoint' | 'waitForCheckpoint'>;
  /** Stop the current worker group, if any (agent shutdown, drain, job end). */
  stopAll(reason: string): Promise<void>;
  /**
   * Stop the current group if it started before `before` (ms) for a job other than `keep`: a
   * pool agent's backstop once its pool says the node left that job. A group started after the
   * pool was asked belongs to a newer grant and is kept.
   */
  stopStale(keep: string | null, before: number, reason: string): Promise<void>;
}

export function createNodeActivities(deps: NodeDeps): NodeActivityHandle {
  let current: WorkerGroup | null = null;
  let currentRun: { jobId: string; startedAt: number } | null = null;
  let currentRound = 0;

  async function stopAll(reason: string): Promise<void> {
    const g = current;
    current = null;
    if (g) await g.stop(reason);
  }

  /** The command and extra environment of a job on this node; throws NotAllowed when refused. */
  async function launchFor(launch: Launch | undefined): Promise<{ entrypoint: Entrypoint; env: Record<string, string> }> {
    if (deps.entrypoint) return { entrypoint: deps.entrypoint, env: {} };
    if (!launch) throw ApplicationFailure.nonRetryable(`agent ${deps.nodeId} is a pool agent: it runs only jobs submitted to its pool`, NOT_ALLOWED);
    const why = deps.checkLaunch ? await deps.checkLaunch(launch) : `agent ${deps.nodeId} has no launch policy`;
    if (why !== null) throw ApplicationFailure.nonRetryable(why, NOT_ALLOWED);
    return launch;
  }

  async function prepare(input: PrepareInput): Promise<PrepareResult> {
    Context.current().heartbeat();
    await launchFor(input.launch);
    await stopAll(`round ${input.round} is forming`);
    const port = await reservePort(deps.bindAddress);
    deps.log.info({ round: input.round, port }, 'prepared');
    return { nodeId: deps.nodeId, port };
  }

  async function runWorkers(a: RoundAssignment): Promise<RunWorkersResult> {
    const ctx = Context.current();
    await stopAll(`round ${a.round} starts`);
    const errorDir = path.join(deps.runDir, a.jobId, `round_${a.round}`);
    await mkdir(errorDir, { recursive: true });
    const { entrypoint, env: extra } = await launchFor(a.launch);
    // The agent's interpreter, never the submitter's (PYTHON_EXEC is never taken from a launch).
    const python = resolvePythonExec(deps.baseEnv);
    const baseEnv = { ...deps.baseEnv, ...extra };
    const workers = Array.from({ length: a.localWorldSize }, (_, localRank) => {
      const env = buildWorkerEnv(a, localRank, { baseEnv, errorFile: path.join(errorDir, `error_${localRank}.json`) });
      return { localRank, rank: a.rankOffset + localRank, ...buildCommand(entrypoint, localRank, python), env };
    });
    const logDir = deps.output.logDir ? path.join(deps.output.logDir, a.jobId, `attempt_${a.round}`) : undefined;
    const group = (deps.startGroup ?? startWorkerGroup)({
      workers,
      shutdownTimeoutMs: deps.shutdownTimeoutMs,
      output: { ...deps.output, logDir },
      reaper: deps.reaper,
    });
    current = group;
    currentRun = { jobId: a.jobId, startedAt: Date.now() };
    currentRound = a.round;
    deps.log.info({ round: a.round, groupRank: a.groupRank, worldSize: a.worldSize, pids: group.pids }, 'workers started');
    deps.onWorkersStarted?.(a, group.pids);
    // The job picks the interval from the heartbeat timeout and the group size; older jobs did not.
    const every = Math.max(100, a.heartbeatIntervalMs ?? Math.min(1000, (ctx.info.heartbeatTimeoutMs ?? 10_000) / 4));
    const beat = setInterval(() => ctx.heartbeat({ round: a.round }), every);
    try {
      const result = await Promise.race([group.wait(), ctx.cancelled]);
      if (result.state === 'succeeded') return { state: 'succeeded' };
      if (result.state === 'failed') {
        const { localRank, rank, exitCode, signal, message, timestamp } = result.failure;
        deps.log.warn({ round: a.round, rank, exitCode, signal, message }, 'worker failed');
        return { state: 'failed', failure: { localRank, rank, exitCode, signal, message, timestamp } };
      }
      throw ApplicationFailure.nonRetryable(`workers of round ${a.round} were stopped: ${result.reason ?? 'superseded'}`, 'WorkersStopped');
    } catch (err) {
      if (err instanceof CancelledFailure) deps.log.info({ round: a.round, reason: err.message }, 'round cancelled: stopping workers');
      await group.stop('round cancelled');
      throw err;
    } finally {
      clearInterval(beat);
      if (current === group) current = null;
    }
  }

  async function signalWorkers(input: SignalWorkersInput): Promise<{ signal: string; signalled: number }> {
    const signal = deps.checkpointSignal ?? 'SIGUSR1';
    const g = current;
    const mine = g !== null && currentRun?.jobId === input.jobId && currentRound === input.round;
    const signalled = mine ? (g.signal?.(signal) ?? 0) : 0;
    deps.log.info({ round: input.round, signal, signalled, reason: input.reason }, 'checkpoint signal sent');
    return { signal, signalled };
  }

  async function stopStale(keep: string | null, before: number, reason: string): Promise<void> {
    if (current && currentRun && currentRun.jobId !== keep && currentRun.startedAt < before) await stopAll(reason);
  }

  return { activities: { prepare, runWorkers, signalWorkers }, stopAll, stopStale };
}
