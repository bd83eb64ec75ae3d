/**
 * The timers of one worker group, as pure functions: a request in, the book out; at time t,
 * which workers are due to be killed. The same rules as torch's FileTimerServer
 * (register_timers, get_expired_timers, the reap loop), except that only the group's own
 * workers' pids are taken at all.
 */
import type { Expiry, Timer, TimerBook, TimerRequest } from './types';

export const emptyBook: TimerBook = new Map();

export function timerKey(pid: number, scopeId: string): string {
  return `${pid}\u0000${scopeId}`;
}

export interface Applied {
  book: TimerBook;
  /** Why the request was ignored; null when it was applied. */
  ignored: string | null;
}

/**
 * Applies a request read at `nowMs`: acquire (or renew) the timer (pid, scope), or release it
 * when its expiration time is negative. A pid that is not one of `workerPids` is ignored: the
 * FIFO is the only way in, and nothing written to it may make the agent signal another process.
 */
export function applyRequest(book: TimerBook, req: TimerRequest, nowMs: number, workerPids: ReadonlySet<number>): Applied {
  if (!workerPids.has(req.pid)) return { book, ignored: `pid ${req.pid} is not a running worker of this round` };
  const key = timerKey(req.pid, req.scopeId);
  const next = new Map(book);
  if (req.expirationTime < 0) {
    next.delete(key);
    return { book: next, ignored: null };
  }
  const expiresAtMs = req.expirationTime * 1000;
  next.set(key, { pid: req.pid, scopeId: req.scopeId, expiresAtMs, signal: req.signal, afterMs: expiresAtMs - nowMs });
  return { book: next, ignored: null };
}

export interface Due {
  /** Workers to kill now, each with the signal of its earliest expired timer that has one. */
  kill: Expiry[];
  /** Expired timers that carry no signal (<= 0): torch never kills for them; reported once. */
  unsignalled: Timer[];
  /** The book without the killed pids' timers and without the unsignalled expired ones. */
  book: TimerBook;
}

/** What is due at `nowMs` (a timer expires when its time is <= now, as in torch). */
export function dueAt(book: TimerBook, nowMs: number): Due {
  const byPid = new Map<number, Timer[]>();
  for (const t of book.values()) if (t.expiresAtMs <= nowMs) byPid.set(t.pid, [...(byPid.get(t.pid) ?? []), t]);
  const kill: Expiry[] = [];
  const unsignalled: Timer[] = [];
  for (const [pid, timers] of byPid) {
    timers.sort((a, b) => a.expiresAtMs - b.expiresAtMs);
    const timer = timers.find((t) => t.signal > 0);
    if (timer) kill.push({ pid, timer, scopes: timers.map((t) => t.scopeId) });
    else unsignalled.push(...timers);
  }
  if (kill.length === 0 && unsignalled.length === 0) return { kill, unsignalled, book };
  const killed = new Set(kill.map((k) => k.pid));
  const gone = new Set(unsignalled.map((t) => timerKey(t.pid, t.scopeId)));
  const next = new Map([...book].filter(([key, t]) => !killed.has(t.pid) && !gone.has(key)));
  kill.sort((a, b) => a.timer.expiresAtMs - b.timer.expiresAtMs || a.pid - b.pid);
  return { kill, unsignalled, book: next };
}

/** The book without any timer of `pids` (workers that exited: torch's clear_timers). */
export function forgetPids(book: TimerBook, pids: Iterable<number>): TimerBook {
  const drop = new Set(pids);
  if (drop.size === 0) return book;
  return new Map([...book].filter(([, t]) => !drop.has(t.pid)));
}

