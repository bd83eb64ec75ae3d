/**
 * Node activities, run by each node's agent on its own task queue (see activities/types.ts for
 * why they are pinned). The agent keeps at most one worker group alive per job: `prepare`
 * stops whatever an earlier round left, so a round never starts beside stale workers even
 * when a cancellation has not arrived yet. Workers that even SIGKILL does not end (asleep in the
 * kernel) are remembered: while one lives, `prepare` and `runWorkers` fail with WORKERS_STUCK
 * naming them, and the job takes the node out.
 */
import { Context, CancelledFailure } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Launch, RoundAssignment } from '../src/job/assignment';
import type { Entrypoint } from '../src/job/spec';
import type { LaunchCheck } from '../src/agent/allow';
import { buildCommand, buildWorkerEnv, poolWorkerBaseEnv, resolvePythonExec, timersServed, type WorkerLaunchOptions } from '../src/agent/env';
import { withBinding } from '../src/agent/workers/numa';
import { endEvents, startEvents, type EventContext } from '../src/agent/workers/events';
import { readFileSync } from 'node:fs';
import { openTimerFifo, type TimerFifo } from '../src/agent/timer/fifo';
import { describeStuck, startWorkerGroup, stillStuck, type StuckProcesses } from '../src/agent/workers';
import type { GroupResult, OutputOptions, Reaper } from '../src/agent/workers/types';
import { liveRound, type LiveRound } from '../src/agent/workers/live-round';
import type { Logger } from '../src/log';
import { reservePort } from './port';
import { createPeerWatch, type PeerLost, type PeerWatch } from '../src/agent/peer-watch';
import { peerLostMessage } from '../src/job/peer-watch';
import { runHealthCheck, type HealthCheck } from '../src/agent/health-check';
import { trustedFate } from '../src/agent/nudge-fate';
import type { NodeFate } from '../src/job/fate';
import type { CheckHealthInput, CheckHealthResult, NodeActivities, NudgeInput, PrepareInput, PrepareResult, RunWorkersResult, SignalWorkersInput } from './types';
import { HEALTH_CHECK_FAILED, NOT_ALLOWED, WORKERS_STUCK } from './types';

export interface NodeDeps {
  nodeId: string;
  /**
   * What this node runs (`telastic run`: the agent's own command line). Absent on a pool agent,
   * which runs each job's `launch` once `checkLaunch` allows it.
   */
  entrypoint?: Entrypoint;
  /**
   * A pool agent's policy (src/agent/allow.ts): why it refuses the launch, or the launch as it
   * runs (its script by the real path that was checked) and the agent-only variables it passes on.
   */
  checkLaunch?: (launch: Launch) => Promise<LaunchCheck>;
  /** Host the master port is reserved on (the node's advertised address). */
  bindAddress: string;
  output: Omit<OutputOptions, 'logDir'> & { logDir?: string };
  shutdownTimeoutMs: number;
  /** What `signalWorkers` sends: --checkpoint-signal. @default SIGUSR1 */
  checkpointSignal?: NodeJS.Signals;
  baseEnv: NodeJS.ProcessEnv;
  /**
   * The operator's health check (--health-check), run in every `prepare` after the node's stale
   * workers stopped, and by `checkHealth`. Absent: every check passes.
   */
  healthCheck?: HealthCheck;
  /**
   * The signal the agent was stopped by, once it was (`telastic run --signals-to-handle`): from
   * then on every stop of this node's workers sends it instead of SIGTERM, as torchrun's agent
   * closes its workers with the signal it received.
   */
  stopSignal?: () => NodeJS.Signals | undefined;
  /** `--event-log-handler console`: where torch's worker status events go, one JSON line each (events.ts). */
  eventLog?: (line: string) => void;
  /** Worker options of `telastic run` (torchrun's --virtual-local-rank, --numa-binding, …). */
  workerOptions?: WorkerLaunchOptions;
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
  /**
   * How long workers whose job run closed mid-round (NOT_FOUND) keep running for the job's next
   * run to adopt them (a move to a newer build, docs/upgrading.md). @default ADOPTION_WINDOW_MS
   */
  adoptionWindowMs?: number;
  /**
   * The agent's peer watch (src/agent/peer-watch.ts): its listener's port goes out in every
   * `prepare`; `runWorkers` watches the peer its assignment names. @default one on bindAddress
   */
  peerWatch?: PeerWatch;
}

/** Long enough for the next run's first task and its `runWorkers` to reach the node. */
export const ADOPTION_WINDOW_MS = 30_000;

/**
 * How long a worker failure waits for this node's peer watch before it is reported: a peer's
 * agent killed breaks the collectives here too, and the watch's evidence names the cause.
 */
export const PEER_REPORT_GRACE_MS = 300;

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
  /** Worker processes of the current round still running (the agent's metrics). */
  workersRunning(): number;
  /**
   * Milliseconds since the job last had this node do anything (prepare, run, check, nudge): 0
   * while a round's workers run here, Infinity before the first. A node busy with its job is
   * nudged when its part changes (workflows/nudge.ts) and need not ask.
   */
  idleMs(): number;
  /**
   * Called with the job's id on every `nudge` (src/job/fate.ts), with the fate it carries when
   * the agent may act on it (src/agent/nudge-fate.ts), and when a round's heartbeat finds its run
   * gone (a new run, or this node dropped); returns the unsubscribe.
   */
  onNudge(fn: (jobId: string, fate: NodeFate | null) => void): () => void;
  /**
   * `node N: workers … did not exit … after SIGKILL (state D)` while processes of an earlier
   * round that SIGKILL did not end are alive; null otherwise.
   */
  stuck(): string | null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** torch's worker status events of one round: START now, the end when the group ends. */
function logEvents(
  emit: (line: string) => void,
  a: RoundAssignment,
  entrypoint: Entrypoint,
  python: string,
  workers: { localRank: number; rank: number }[],
  group: ReturnType<typeof startWorkerGroup>,
  errorDir: string,
): void {
  const ctx: EventContext = {
    runId: a.jobId,
    role: a.role,
    groupRank: a.groupRank,
    groupWorldSize: a.groupWorldSize,
    entryPoint: path.basename(entrypoint.noPython ? entrypoint.script : python),
    agentRestarts: a.restartCount,
    worldSize: a.worldSize,
  };
  const infos = workers.map((w, i) => ({ localRank: w.localRank, rank: w.rank, pid: group.pids[i] ?? 0 }));
  const errorData = (localRank: number): unknown => {
    try {
      return JSON.parse(readFileSync(path.join(errorDir, `error_${localRank}.json`), 'utf8'));
    } catch {
      return undefined;
    }
  };
  for (const line of startEvents(ctx, infos)) emit(line);
  void group.wait().then((r) => {
    for (const line of endEvents(ctx, infos, r, errorData)) emit(line);
  });
}

export function createNodeActivities(deps: NodeDeps): NodeActivityHandle {
  // The last round started here, kept after it ended: a run that adopts it gets its result.
  let current: LiveRound | null = null;
  let startedAt = 0;
  let activeAt = 0;
  /** The newest round this node prepared, per job: a nudge's fate older than it is stale (src/agent/nudge-fate.ts). */
  const preparedRounds = new Map<string, number>();
  const touch = () => void (activeAt = Date.now());
  // Processes of an ended round that SIGKILL did not end; dropped once none is alive.
  let stuck: StuckProcesses | null = null;
  const peers = deps.peerWatch ?? createPeerWatch({ bindAddress: deps.bindAddress, nodeId: deps.nodeId, log: deps.log });

  const stuckLine = (): string | null => {
    const was = stuck;
    stuck = stillStuck(stuck);
    // Gone at last: their group ids may be reused, so the reaper must no longer kill them.
    if (was && !stuck) for (const pgid of was.pgids) deps.reaper?.untrack(pgid);
    return stuck ? describeStuck(stuck) : null;
  };
  const noteStuck = (round: number, r: GroupResult) => {
    if (!r.stuck || stuck === r.stuck) return;
    stuck = r.stuck;
    deps.log.error({ round, pids: r.stuck.processes.map((p) => p.pid) }, describeStuck(r.stuck));
  };
  /** Fails the activity while stuck processes live: no round may start beside them. */
  const refuseIfStuck = () => {
    const line = stuckLine();
    if (line !== null) throw ApplicationFailure.nonRetryable(line, WORKERS_STUCK);
  };

  async function stopAll(reason: string): Promise<void> {
    // Its workers stop normally: whoever watches this agent must not blame it.
    peers.endAll();
    const r = current;
    current = null;
    if (!r) return;
    await r.group.stop(reason, deps.stopSignal?.());
    noteStuck(r.round, await r.group.wait());
  }

  /**
   * The command of a job on this node and the environment its workers start from (before
   * torchrun's variables); throws NotAllowed when refused. A pool agent runs the launch as its
   * check resolved it, and keeps its own credentials out of the workers' environment.
   */
  async function launchFor(launch: Launch | undefined): Promise<{ entrypoint: Entrypoint; baseEnv: Record<string, string | undefined> }> {
    if (deps.entrypoint) return { entrypoint: deps.entrypoint, baseEnv: deps.baseEnv };
    if (!launch) throw ApplicationFailure.nonRetryable(`agent ${deps.nodeId} is a pool agent: it runs only jobs submitted to its pool`, NOT_ALLOWED);
    const checked: LaunchCheck = deps.checkLaunch ? await deps.checkLaunch(launch) : { refused: `agent ${deps.nodeId} has no launch policy` };
    if (checked.refused !== null) throw ApplicationFailure.nonRetryable(checked.refused, NOT_ALLOWED);
    return { entrypoint: checked.launch.entrypoint, baseEnv: { ...poolWorkerBaseEnv(deps.baseEnv, checked.passEnv), ...checked.launch.env } };
  }

  /**
   * The agent's health check, with the job's names in its environment; heartbeats while it runs.
   * Run after stale workers stopped: their memory and GPUs are free again.
   */
  async function checkHealth(input: CheckHealthInput): Promise<CheckHealthResult> {
    touch();
    const check = deps.healthCheck;
    if (!check) return { ok: true };
    const ctx = Context.current();
    const beat = setInterval(() => ctx.heartbeat({ round: input.round }), 1000);
    try {
      const env = {
        ...deps.baseEnv,
        TELASTIC_JOB_ID: input.jobId,
        TELASTIC_ROUND: String(input.round),
        TELASTIC_NODE_ID: deps.nodeId,
        ...(input.checkpointDir ? { TELASTIC_CHECKPOINT_DIR: input.checkpointDir } : {}),
      };
      const r = await runHealthCheck(check, env);
      if (r.ok) {
        deps.log.info({ round: input.round, durationMs: r.durationMs }, 'health check passed');
        return { ok: true };
      }
      deps.log.warn({ round: input.round, exitCode: r.exitCode, reason: r.reason, durationMs: r.durationMs }, 'health check failed: the node stays out of the round');
      return { ok: false, reason: r.reason, exitCode: r.exitCode };
    } finally {
      clearInterval(beat);
    }
  }

  async function prepare(input: PrepareInput): Promise<PrepareResult> {
    touch();
    preparedRounds.set(input.jobId, Math.max(input.round, preparedRounds.get(input.jobId) ?? -1));
    const ctx = Context.current();
    // No heartbeat at the start: each is a write on the server, and a node's prepare is over
    // within the second; stopping old workers or a health check heartbeats every second below.
    await launchFor(input.launch);
    peers.roundForming(input.jobId, input.round);
    // Stopping workers that ignore SIGTERM takes the shutdown timeout, and more when they do not
    // die; a health check takes up to its own timeout.
    // With details: a prepare that timed out on its heartbeat after one was recorded is not retried (workflows/group.ts unheard).
    const beat = setInterval(() => ctx.heartbeat({ round: input.round }), 1_000);
    let health: CheckHealthResult;
    try {
      await stopAll(`round ${input.round} is forming`);
      refuseIfStuck();
      health = await checkHealth(input);
    } finally {
      clearInterval(beat);
    }
    if (!health.ok) throw ApplicationFailure.create({ message: health.reason, type: HEALTH_CHECK_FAILED, nonRetryable: true, details: [{ exitCode: health.exitCode }] });
    const port = await reservePort(deps.bindAddress);
    // Without a listener the node is watched by heartbeats only, as before peer watch.
    const watchPort = await peers.port().catch((err: Error) => void deps.log.warn({ err: err.message }, 'peer watch: cannot listen: this node is noticed lost by heartbeats only'));
    deps.log.info({ round: input.round, port, watchPort }, 'prepared');
    return { nodeId: deps.nodeId, port, ...(watchPort ? { watchPort } : {}) };
  }

  async function runWorkers(a: RoundAssignment): Promise<RunWorkersResult> {
    touch();
    const ctx = Context.current();
    // Rounds are numbered per job and runWorkers runs once per round, so a second one for the
    // round held here is the job's next run adopting it.
    let live = current && current.jobId === a.jobId && current.round === a.round ? current : null;
    if (live) deps.log.info({ round: a.round, pids: live.group.pids }, 'workers adopted by the job\'s new run');
    else live = await start(a);
    return watch(ctx, a, live).finally(touch);
  }

  async function start(a: RoundAssignment): Promise<LiveRound> {
    // Checked before anything is stopped: a refused launch leaves the node's workers running.
    // It runs the real path this check resolved, whose directories no one else may write.
    const { entrypoint, baseEnv } = await launchFor(a.launch);
    await stopAll(`round ${a.round} starts`);
    refuseIfStuck();
    const errorDir = path.join(deps.runDir, a.jobId, `round_${a.round}`);
    await mkdir(errorDir, { recursive: true });
    // The agent's interpreter, never the submitter's (PYTHON_EXEC is never taken from a launch).
    const python = resolvePythonExec(deps.baseEnv);
    const timerFifo = timersServed(baseEnv) ? openTimers(path.join(errorDir, 'watchdog_timer')) : undefined;
    const wo = deps.workerOptions ?? {};
    const workers = Array.from({ length: a.localWorldSize }, (_, localRank) => {
      const errorFile = path.join(errorDir, `error_${localRank}.json`);
      const env = buildWorkerEnv(a, localRank, {
        baseEnv,
        errorFile,
        timerFile: timerFifo?.path,
        progressFile: path.join(errorDir, `progress_${localRank}`),
        virtualLocalRank: wo.virtualLocalRank,
        signalsToHandle: wo.signalsToHandle,
      });
      const cmd = buildCommand(entrypoint, localRank, python);
      const cpus = wo.numa?.cpus[localRank];
      return { localRank, rank: a.rankOffset + localRank, ...(cpus === undefined ? cmd : withBinding(cmd, wo.numa!.tool, cpus)), env };
    });
    const logDir = deps.output.logDir ? path.join(deps.output.logDir, a.jobId, `attempt_${a.round}`) : undefined;
    let group: ReturnType<typeof startWorkerGroup>;
    try {
      group = (deps.startGroup ?? startWorkerGroup)({
        workers,
        shutdownTimeoutMs: deps.shutdownTimeoutMs,
        output: { ...deps.output, logDir },
        reaper: deps.reaper,
        timerFifo,
        log: deps.log,
        progressTimeoutMs: a.progressTimeoutMs,
        progressStartTimeoutMs: a.progressStartTimeoutMs,
      });
    } catch (err) {
      timerFifo?.close();
      throw err;
    }
    // The group closes it when it ends; a stand-in group (bench/scale-sim.ts) may not.
    if (timerFifo) void group.wait().finally(() => timerFifo.close());
    void group.wait().then((r) => noteStuck(a.round, r));
    if (deps.eventLog) logEvents(deps.eventLog, a, entrypoint, python, workers, group, errorDir);
    current = liveRound(a.jobId, a.round, group);
    startedAt = Date.now();
    deps.log.info({ round: a.round, groupRank: a.groupRank, worldSize: a.worldSize, pids: group.pids }, 'workers started');
    deps.onWorkersStarted?.(a, group.pids);
    return current;
  }

  /**
   * The round's watchdog FIFO (torch.distributed.elastic.timer), always in the agent's own run
   * directory: never a path the environment names, which would let a submitter's launch choose
   * a file for the agent to replace. A FIFO that cannot be made leaves the round without timers.
   */
  function openTimers(file: string): TimerFifo | undefined {
    try {
      return openTimerFifo(file);
    } catch (err) {
      deps.log.warn({ file, err: (err as Error).message }, 'cannot create the watchdog timer FIFO: torch timers are not served this round');
      return undefined;
    }
  }

  /** This node watched `lost.peer`, whose agent is gone: stop the workers here, blame the peer. */
  function peerLostResult(a: RoundAssignment, group: LiveRound['group'], lost: PeerLost): RunWorkersResult {
    const message = peerLostMessage(lost.peer, a.nodeId, lost.error);
    deps.log.warn({ round: a.round, peer: lost.peer }, `${message}: stopping this node's workers`);
    // Not awaited: the next `prepare` waits for them; the job re-forms meanwhile.
    void group.stop(`peer ${lost.peer} lost`, deps.stopSignal?.());
    return { state: 'peerLost', peer: lost.peer, message };
  }

  async function watch(ctx: Context, a: RoundAssignment, live: LiveRound): Promise<RunWorkersResult> {
    const { group } = live;
    const me = live.claim();
    // The job picks the interval from the heartbeat timeout and the group size.
    const every = Math.max(100, a.heartbeatIntervalMs);
    // The details carry the workers' progress, which `telastic status` reads from the pending activity.
    const beat = setInterval(() => ctx.heartbeat({ round: a.round, nodeId: a.nodeId, progress: group.progress?.() ?? null }), every);
    // The peer this node watches (src/job/peer-watch.ts): its agent gone ends this round at once.
    const watching = a.watch ? peers.watch({ jobId: a.jobId, round: a.round, nodeId: a.nodeId }, a.watch) : null;
    const peerLost = watching ? watching.lost.then((l) => ({ state: 'peerLost' as const, ...l })) : new Promise<never>(() => undefined);
    let released = false;
    try {
      const result = await Promise.race([group.wait(), ctx.cancelled, peerLost]);
      // A worker failing as its peer's agent dies (a broken collective) races this node's watch;
      // the watch's evidence, due within milliseconds, names the cause, so it gets a moment.
      if (result.state === 'failed' && watching) {
        const late = await Promise.race([peerLost, new Promise<null>((r) => setTimeout(() => r(null), PEER_REPORT_GRACE_MS))]);
        if (late) return peerLostResult(a, group, late);
      }
      if (result.state === 'peerLost') return peerLostResult(a, group, result);
      // A round that succeeded is over whatever is left; one that failed reports the node stuck.
      if (result.state === 'succeeded') return { state: 'succeeded' };
      if (result.stuck) {
        noteStuck(a.round, result);
        return { state: 'stuck', message: describeStuck(result.stuck) };
      }
      if (result.state === 'failed') {
        const { localRank, rank, exitCode, signal, message, timestamp } = result.failure;
        deps.log.warn({ round: a.round, rank, exitCode, signal, message }, 'worker failed');
        return { state: 'failed', failure: { localRank, rank, exitCode, signal, message, timestamp } };
      }
      throw ApplicationFailure.nonRetryable(`workers of round ${a.round} were stopped: ${result.reason ?? 'superseded'}`, 'WorkersStopped');
    } catch (err) {
      if (!live.owns(me)) throw err; // adopted by the job's next run: its workers, not ours to stop
      if (err instanceof CancelledFailure && ctx.cancellationDetails?.notFound) {
        const windowMs = deps.adoptionWindowMs ?? ADOPTION_WINDOW_MS;
        deps.log.info({ round: a.round, windowMs }, 'job run closed mid-round: workers wait for its next run to adopt them');
        live.release(me, windowMs, () => void group.stop(`not adopted within ${windowMs / 1000}s`, deps.stopSignal?.()));
        released = true;
        // A round the job ran itself: either the job moved to a new run or it dropped this node
        // (a cut link outlasted the heartbeat timeout, and the job's nudge expired unseen): the
        // agent asks it which. A group workflow closes at every end of its round, for each of its
        // nodes at once; the job tells them what it needs to (a prepare, a fate): 1,024 nodes
        // asking the job at every round boundary made tens of thousands of refused queries.
        if (ctx.info.workflowExecution?.workflowId === a.jobId) tellNudged(a.jobId);
        throw err;
      }
      if (err instanceof CancelledFailure) deps.log.info({ round: a.round, reason: err.message }, 'round cancelled: stopping workers');
      await group.stop('round cancelled', deps.stopSignal?.());
      throw err;
    } finally {
      clearInterval(beat);
      watching?.close();
      // The round is over here: its watchers hear so (not when the workers wait to be adopted).
      if (!released) peers.endRound(a.jobId, a.round);
    }
  }

  async function signalWorkers(input: SignalWorkersInput): Promise<{ signal: string; signalled: number }> {
    const signal = deps.checkpointSignal ?? 'SIGUSR1';
    const r = current;
    const mine = r !== null && !r.ended && r.jobId === input.jobId && r.round === input.round;
    const signalled = mine ? (r.group.signal?.(signal) ?? 0) : 0;
    deps.log.info({ round: input.round, signal, signalled, reason: input.reason }, 'checkpoint signal sent');
    return { signal, signalled };
  }

  const nudged = new Set<(jobId: string, fate: NodeFate | null) => void>();
  const tellNudged = (jobId: string, fate: NodeFate | null = null) => {
    for (const fn of nudged) fn(jobId, fate);
  };
  async function nudge(input: NudgeInput): Promise<void> {
    touch();
    const info = Context.current().info;
    const fate = trustedFate(input.jobId, input.fate, { workflowId: info.workflowExecution?.workflowId, workflowType: info.workflowType }, preparedRounds.get(input.jobId));
    deps.log.debug({ job: input.jobId, fate }, fate ? 'told its fate by the job' : 'nudged by the job: asking it what changed');
    tellNudged(input.jobId, fate);
  }

  async function stopStale(keep: string | null, before: number, reason: string): Promise<void> {
    if (current && current.jobId !== keep && startedAt < before) await stopAll(reason);
  }

  // A worker of a round that runs on may have exited 0 already: counted only while its pid lives.
  const workersRunning = () => (current && !current.ended ? current.group.pids.filter(alive).length : 0);
  const stuckNow = () => {
    const line = stuckLine();
    return line === null ? null : `node ${deps.nodeId}: ${line}`;
  };
  return {
    activities: { prepare, checkHealth, runWorkers, signalWorkers, nudge },
    stopAll,
    stopStale,
    workersRunning,
    idleMs: () => (current !== null && !current.ended ? 0 : activeAt === 0 ? Infinity : Date.now() - activeAt),
    onNudge(fn) {
      nudged.add(fn);
      return () => nudged.delete(fn);
    },
    stuck: stuckNow,
  };
}
