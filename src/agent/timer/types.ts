/**
 * torch.distributed.elastic.timer's file-based protocol, as telastic's agent serves it.
 *
 * A worker (torch's `FileTimerClient`) opens the FIFO named in TORCHELASTIC_TIMER_FILE, writes one
 * JSON line and closes it: `{"version": 1, "pid": P, "scope_id": S, "expiration_time": T,
 * "signal": N}`. T is a Unix time in seconds (`time.time() + after`); a negative T releases the
 * timer (P, S). N is the signal to kill P with when T passes; N <= 0 never kills. torch's
 * `FileTimerServer` keeps one timer per (pid, scope), reaps a pid with the signal of its earliest
 * expired timer that has one, then forgets every timer of that pid. telastic does the same, only
 * for pids of the agent's current workers, and never kills itself (torch's server SIGKILLs its
 * own agent after reaping a worker, so torchrun never restarts the job).
 */

/** One request as it was written (fields renamed to this codebase's case). */
export interface TimerRequest {
  version: number;
  pid: number;
  scopeId: string;
  /** Unix time in seconds; negative: release. */
  expirationTime: number;
  /** Signal number; <= 0: never kill. */
  signal: number;
}

/** An acquired timer. */
export interface Timer {
  pid: number;
  scopeId: string;
  expiresAtMs: number;
  signal: number;
  /** How long it ran for, from when the agent read the request to its expiry. */
  afterMs: number;
}

/** Timers by (pid, scope); see `timerKey`. */
export type TimerBook = ReadonlyMap<string, Timer>;

/** A worker to kill: the timer whose signal is used, and every scope of the pid that expired. */
export interface Expiry {
  pid: number;
  timer: Timer;
  scopes: string[];
}
