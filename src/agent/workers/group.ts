/**
 * A worker group: start every worker of a round, watch them, end them together.
 *
 * States: running → (every worker exited 0) succeeded
 *                 → (first worker exits ≠ 0 or by a signal) failed: the rest are stopped
 *                 → (stop()) stopped: stopping is not a failure.
 * Leaving any state the group stops every process group still alive (grandchildren of
 * successful workers included), and `wait()` resolves only once none is left, or once only
 * processes that SIGKILL did not end within `killWaitMs` are (reported as `stuck`).
 */
import type { ChildProcess } from 'child_process';
import { rmSync } from 'fs';
import { catchesSignal } from './catches';
import { readErrorFileMessage } from './error-file';
import { openFiltered, type FilteredOutputs } from './filtered';
import { prepareOutput, type WorkerOutput } from './output';
import { liveMembers, terminateGroups } from './process-group';
import type { StuckProcesses } from './stuck';
import { spawnWorker } from './spawn';
import { startWatchdog, type Watchdog } from '../timer/watchdog';
import { watchProgress, type ProgressWatch } from './progress';
import type { GroupOptions, GroupResult, WorkerExit, WorkerFailure, WorkerGroup, WorkerSpec } from './types';

interface Running {
  spec: WorkerSpec;
  output: WorkerOutput;
  child: ChildProcess | null;
  pid: number;
  startedAt: number;
  exit: WorkerExit | null;
  /** Why the watchdog killed it (its timer expired); its failure's message then. */
  killedBy: string | null;
  exited: Promise<void>;
  markExited: () => void;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export function startWorkerGroup(opts: GroupOptions): WorkerGroup {
  const pollMs = opts.monitorIntervalMs ?? 100;
  let stopping = false;
  let failure: WorkerFailure | null = null;
  let done: Promise<GroupResult> | null = null;
  let watchdog: Watchdog | null = null;
  let progress: ProgressWatch | null = null;
  let resolveResult: (r: GroupResult) => void = () => {};
  const result = new Promise<GroupResult>((r) => (resolveResult = r));

  // Prepare every output first: a bad log dir must fail the start before any process runs.
  const outputs: WorkerOutput[] = [];
  let filtered: FilteredOutputs | null = null;
  try {
    filtered = openFiltered(opts.output);
    for (const spec of opts.workers) outputs.push(prepareOutput(spec, opts.output, filtered));
  } catch (err) {
    for (const o of outputs) void o.close(0);
    void filtered?.close();
    throw err;
  }
  const workers: Running[] = opts.workers.map((spec, i) => {
    let markExited = () => {};
    const exited = new Promise<void>((r) => (markExited = r));
    return { spec, output: outputs[i]!, child: null, pid: 0, startedAt: Date.now(), exit: null, killedBy: null, exited, markExited };
  });

  const onExit = (w: Running, exitCode: number | null, signal: string | null, message: string | null = null) => {
    if (w.exit !== null) return;
    const now = Date.now();
    const { localRank, rank } = w.spec;
    w.exit = { localRank, rank, pid: w.pid, exitCode, signal, stopped: stopping, timestamp: now, durationMs: now - w.startedAt };
    w.markExited();
    if (stopping) return;
    if (exitCode !== 0 || signal !== null) {
      failure = { localRank, rank, pid: w.pid, exitCode, signal, message: w.killedBy ?? message, timestamp: now };
      void finish('failed');
    } else if (workers.every((x) => x.exit !== null)) {
      void finish('succeeded');
    }
  };

  const finish = (state: GroupResult['state'], reason: string | null = null, signal: NodeJS.Signals = 'SIGTERM'): Promise<GroupResult> => {
    if (done !== null) return done;
    stopping = true;
    watchdog?.stop();
    progress?.stop();
    done = (async (): Promise<GroupResult> => {
      await Promise.resolve(); // a failure during the start loop: let it finish recording pids first
      const pgids = workers.filter((w) => w.pid > 0).map((w) => w.pid);
      const killWaitMs = opts.killWaitMs ?? Math.max(opts.shutdownTimeoutMs, 5_000);
      const stuckGroups = await terminateGroups(pgids, opts.shutdownTimeoutMs, pollMs, killWaitMs, signal);
      // Asleep in the kernel (state D, a frozen cgroup): no signal ends them; the group ends without them.
      const members = liveMembers(stuckGroups);
      const stuck: StuckProcesses | null = members.length > 0 ? { processes: members, afterKillMs: killWaitMs, pgids: stuckGroups } : null;
      // A leader that left its group (setsid) is not reached by the group signal.
      for (const w of workers) if (w.exit === null) w.child?.kill('SIGKILL');
      const stuckPids = new Set(members.map((m) => m.pid));
      await Promise.race([Promise.all(workers.filter((w) => !stuckPids.has(w.pid)).map((w) => w.exited)), delay(5_000)]);
      await Promise.all(workers.map((w) => w.output.close(1_000)));
      await filtered?.close();
      opts.timerFifo?.close();
      // Stuck groups stay tracked: should they ever wake after the agent died, the reaper ends them.
      for (const pgid of pgids) if (!stuckGroups.includes(pgid)) opts.reaper?.untrack(pgid);

      const exits = workers.flatMap((w) => (w.exit === null ? [] : [w.exit])).sort((a, b) => a.localRank - b.localRank);
      const extra = stuck ? { stuck } : {};
      if (state === 'succeeded') return { state, exits, ...extra };
      if (state === 'stopped' || failure === null) return { state: 'stopped', reason, exits, ...extra };
      const failed = workers.find((w) => w.spec.localRank === failure!.localRank)!;
      const message =
        failure.message ??
        readErrorFileMessage(failed.spec.env.TORCHELASTIC_ERROR_FILE) ??
        failed.output.lastStderrLine();
      return { state: 'failed', failure: { ...failure, message }, exits, ...extra };
    })();
    void done.then(resolveResult);
    return done;
  };

  for (const w of workers) {
    if (stopping) break; // a worker could not even be started: start no more
    const { file, args, env } = w.spec;
    // A stale error file from an earlier round would be taken for this round's failure.
    if (env.TORCHELASTIC_ERROR_FILE) rmSync(env.TORCHELASTIC_ERROR_FILE, { force: true });
    if (env.TELASTIC_PROGRESS_FILE) rmSync(env.TELASTIC_PROGRESS_FILE, { force: true });
    try {
      w.child = spawnWorker({ file, args, env, cwd: opts.cwd, stdio: w.output.stdio });
    } catch (err) {
      onExit(w, 126, null, `failed to execute ${file}: ${(err as Error).message}`);
      continue;
    }
    w.pid = w.child.pid ?? 0;
    w.output.attach(w.child);
    if (w.pid > 0) opts.reaper?.track(w.pid);
    w.child.once('exit', (code, signal) => onExit(w, code, signal));
    w.child.once('error', (err: NodeJS.ErrnoException) => {
      // Without setpriv a missing or non-executable file surfaces here; report it as a shell would.
      if (w.pid === 0) onExit(w, err.code === 'ENOENT' ? 127 : 126, null, `failed to execute ${file}: ${err.message}`);
    });
  }

  // Started once every pid is known; requests written meanwhile wait in the FIFO's reader.
  if (opts.timerFifo && !stopping) {
    watchdog = startWatchdog({
      fifo: opts.timerFifo,
      workerPids: () => new Set(workers.filter((w) => w.exit === null && w.pid > 0).map((w) => w.pid)),
      onExpired: (e, message) => {
        const w = workers.find((x) => x.pid === e.pid);
        if (w && w.killedBy === null) w.killedBy = message;
      },
      log: opts.log,
    });
  }
  const progressFiles = workers.flatMap((w) => (w.spec.env.TELASTIC_PROGRESS_FILE ? [{ rank: w.spec.rank, file: w.spec.env.TELASTIC_PROGRESS_FILE }] : []));
  if (progressFiles.length > 0 && !stopping) {
    progress = watchProgress({
      files: progressFiles,
      startedAt: Date.now(),
      timeoutMs: opts.progressTimeoutMs,
      startTimeoutMs: opts.progressStartTimeoutMs,
      // Hung, all of them (a collective that never returns holds every rank): each is killed,
      // and whichever exit is seen first is the failure, with this message.
      onHung: (message) => {
        opts.log?.warn({ pids: workers.map((w) => w.pid) }, message);
        for (const w of workers) {
          if (w.exit !== null || w.pid <= 0) continue;
          if (w.killedBy === null) w.killedBy = message;
          try {
            process.kill(w.pid, 'SIGKILL');
          } catch {
            // It exited meanwhile: its exit is reported as it is.
          }
        }
      },
    });
  }
  if (workers.length === 0) void finish('succeeded');

  return {
    pids: workers.filter((w) => w.pid > 0).map((w) => w.pid),
    wait: () => result,
    async stop(reason?: string, signal?: NodeJS.Signals) {
      await finish('stopped', reason ?? null, signal);
    },
    progress: () => progress?.report() ?? { ageMs: null, step: null, runningMs: Date.now() - (workers[0]?.startedAt ?? Date.now()) },
    signal(sig: NodeJS.Signals): number {
      if (stopping) return 0;
      let n = 0;
      // Not to a worker with no handler for it: most signals would kill it (see catches.ts).
      for (const w of workers) if (w.exit === null && catchesSignal(w.pid, sig) !== false && w.child?.kill(sig)) n++;
      return n;
    },
  };
}
