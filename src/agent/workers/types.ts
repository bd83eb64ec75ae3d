/**
 * A worker group: the training processes one agent runs for one round, started together and
 * ended together. How each process ended is data (`WorkerExit`), and the first failure is the
 * root cause (`WorkerFailure`), as in torch.distributed.elastic.multiprocessing.
 */

import type { Logger } from '../../log';
import type { TimerFifo } from '../timer/fifo';
import type { ProgressReport } from './progress';
import type { StuckProcesses } from './stuck';

/** torchrun's `Std` flags: which of a worker's streams a setting applies to. */
export const Std = { NONE: 0, OUT: 1, ERR: 2, ALL: 3 } as const;
export type Std = (typeof Std)[keyof typeof Std];

/**
 * A `-r/--redirects` or `-t/--tee` setting: one `Std` for every local rank, or a map from local
 * rank to `Std` in which unlisted ranks get `Std.NONE` (torch's `to_map`).
 */
export type StdSpec = Std | { readonly [localRank: number]: Std };

/** One process to run. `env` must be complete (see `buildWorkerEnv`); nothing else is inherited. */
export interface WorkerSpec {
  localRank: number;
  rank: number;
  file: string;
  args: string[];
  /** Its `TORCHELASTIC_ERROR_FILE` is where the group reads the failure message from. */
  env: Record<string, string>;
}

/** Where worker output goes, with torchrun's `--log-dir`, `-r`, `-t`, `--local-ranks-filter`. */
export interface OutputOptions {
  /**
   * This attempt's log directory (see `attemptLogDir`); each worker writes
   * `<logDir>/<localRank>/stdout.log` and `stderr.log` for the streams redirected or teed.
   * Without it `redirects` and `tee` have nothing to write to: all output goes to the console.
   */
  logDir?: string;
  /** Streams that go to their log file only. */
  redirects: StdSpec;
  /** Streams that go to their log file and to the console. */
  tee: StdSpec;
  /** Only these local ranks reach the console; the files are written all the same. */
  localRanksFilter?: number[];
  /**
   * torchrun's `--duplicate-stdout-filters`: teed stdout lines containing any of these are copied
   * to `<logDir>/filtered_stdout.log` (filtered.ts). Empty or absent: no file.
   */
  duplicateStdoutFilters?: readonly string[];
  /** The same for stderr, into `<logDir>/filtered_stderr.log`. */
  duplicateStderrFilters?: readonly string[];
  /** Where console lines go, each prefixed `[rank<global rank>]:`. @default process.stdout/stderr */
  console?: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream };
}

export interface GroupOptions {
  workers: WorkerSpec[];
  cwd?: string;
  /** SIGTERM, then SIGKILL after this long (torchrun's `--shutdown-timeout`, in ms). */
  shutdownTimeoutMs: number;
  /**
   * How long processes may take to die after SIGKILL before the group gives up on them and reports
   * them stuck (`GroupResult.stuck`). @default max(shutdownTimeoutMs, 5 s)
   */
  killWaitMs?: number;
  /** How often a stopping group is checked for processes still alive. @default 100 */
  monitorIntervalMs?: number;
  output: OutputOptions;
  /** Told every process group, so it can kill them if the agent dies (even by SIGKILL). */
  reaper?: Reaper;
  /**
   * The round's TORCHELASTIC_TIMER_FILE, already open (src/agent/timer): the group serves torch's
   * watchdog timers for its workers from it, kills a worker whose timer expires (its failure's
   * message says which timer), and closes the FIFO when it ends.
   */
  timerFifo?: TimerFifo;
  /** Where the watchdog logs expiries and ignored requests. */
  log?: Pick<Logger, 'info' | 'warn'>;
  /**
   * `--progress-timeout` (progress.ts): the workers' TELASTIC_PROGRESS_FILE are read; when none
   * was written for `timeoutMs`, every worker is killed (SIGKILL) and the failure says so.
   * Without it the files are only read, for the status.
   */
  progressTimeoutMs?: number;
  /** `--progress-start-timeout`: the bound before the workers' first report. @default progressTimeoutMs */
  progressStartTimeoutMs?: number;
}

/** How one worker ended. */
export interface WorkerExit {
  localRank: number;
  rank: number;
  /** 0 when the process never started. */
  pid: number;
  /** null when killed by a signal. 127/126 when the command could not be executed. */
  exitCode: number | null;
  /** e.g. 'SIGKILL'; null when it exited by itself. */
  signal: string | null;
  /** It ended after the group began stopping (a failure elsewhere, or `stop()`). */
  stopped: boolean;
  /** When the exit was seen, ms since the epoch. */
  timestamp: number;
  durationMs: number;
}

/** The root cause of a failed group: the first worker seen to exit non-zero or by a signal. */
export interface WorkerFailure {
  localRank: number;
  rank: number;
  pid: number;
  exitCode: number | null;
  signal: string | null;
  /**
   * First line of the message in the worker's error file, else the last line it wrote to stderr,
   * else null; at most ~500 characters.
   */
  message: string | null;
  /** When the exit was seen, ms since the epoch. */
  timestamp: number;
}

/**
 * How the group ended. `exits` is in local-rank order and holds every worker seen to end.
 * - succeeded: every worker exited 0.
 * - failed: `failure` is the first worker to fail; the others were stopped.
 * - stopped: `stop()` was called before any worker failed; being stopped is not a failure.
 * `stuck`, in any state: processes of the group that SIGKILL did not end within `killWaitMs`
 * (src/agent/workers/stuck.ts); the group ended without them and they are still tracked by the reaper.
 */
export type GroupResult = (
  | { state: 'succeeded'; exits: WorkerExit[] }
  | { state: 'failed'; failure: WorkerFailure; exits: WorkerExit[] }
  | { state: 'stopped'; reason: string | null; exits: WorkerExit[] }
) & { stuck?: StuckProcesses };

export interface WorkerGroup {
  /** Pids (= process group ids) of the started workers, in local-rank order. */
  readonly pids: number[];
  /**
   * Resolves once the group has ended and no process of it is left, grandchildren included, or
   * only processes SIGKILL cannot end are (`stuck`).
   */
  wait(): Promise<GroupResult>;
  /**
   * `signal` (default SIGTERM) to every worker's process group, SIGKILL after
   * `shutdownTimeoutMs`; resolves when no process of the group is left. A no-op on a group that
   * has already ended.
   */
  stop(reason?: string, signal?: NodeJS.Signals): Promise<void>;
  /**
   * Send `signal` to each worker still running that handles it (the worker process itself, not
   * its process group: a data loader's children need not handle it; a worker without a handler
   * would die of most signals, so it is skipped). Returns how many were signalled.
   * Absent on stand-in groups (bench/scale-sim.ts).
   */
  signal?(signal: NodeJS.Signals): number;
  /** The workers' newest progress report (progress.ts). Absent on stand-in groups. */
  progress?(): ProgressReport;
}

/** A sidecar that SIGKILLs the tracked process groups when the agent dies (see reaper.ts). */
export interface Reaper {
  track(pgid: number): void;
  untrack(pgid: number): void;
  /** Kills any group still tracked, stops the sidecar and removes the agent's state file. */
  close(): Promise<void>;
}
