/**
 * The watchdog of one worker group: reads timer requests from its FIFO into the book, and every
 * `intervalMs` kills the workers whose timers expired, as torch's FileTimerServer does for
 * torchrun (max_interval 0.1 s there too). The book's rules are in book.ts; this file only reads,
 * logs, keeps time and signals. Bad requests are logged (the first few) and change nothing.
 */
import type { Logger } from '../../log';
import { applyRequest, dueAt, emptyBook, forgetPids } from './book';
import type { TimerFifo } from './fifo';
import { watchdogMessage } from '../../job/kill-message';
import { parseRequest } from './request';
import type { Expiry, TimerBook } from './types';

/** Ignored requests logged per round; after that they are counted only. */
const LOGGED_IGNORED = 10;

export interface WatchdogOptions {
  fifo: TimerFifo;
  /** Pids of the group's workers that are still running; only they can be timed or killed. */
  workerPids: () => ReadonlySet<number>;
  /** Told just before a worker is signalled, so that its exit is reported with `message`. */
  onExpired: (expiry: Expiry, message: string) => void;
  log?: Pick<Logger, 'info' | 'warn'>;
  /** @default 100 */
  intervalMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** @default process.kill */
  kill?: (pid: number, signal: number) => void;
}

export interface Watchdog {
  /** Requests ignored so far (bad JSON, bad fields, pids not of this group). */
  readonly ignored: number;
  /** Stops checking; the FIFO is the caller's to close. */
  stop(): void;
}

export function startWatchdog(o: WatchdogOptions): Watchdog {
  const now = o.now ?? Date.now;
  const kill = o.kill ?? ((pid, signal) => process.kill(pid, signal));
  let book: TimerBook = emptyBook;
  let ignored = 0;
  let stopped = false;

  const ignore = (reason: string, line: string | null) => {
    ignored++;
    if (ignored <= LOGGED_IGNORED) {
      const more = ignored === LOGGED_IGNORED ? ' (further ones are not logged)' : '';
      o.log?.warn({ file: o.fifo.path, reason, line: line?.slice(0, 200) }, `watchdog timer request ignored${more}`);
    }
  };

  o.fifo.onLine((line) => {
    if (stopped) return;
    if (line === null) return ignore('longer than a request can be', null);
    const parsed = parseRequest(line);
    if (!parsed.ok) return ignore(parsed.reason, line);
    const applied = applyRequest(book, parsed.request, now(), o.workerPids());
    if (applied.ignored !== null) return ignore(applied.ignored, line);
    book = applied.book;
  });

  const check = () => {
    if (stopped || book.size === 0) return;
    const live = o.workerPids();
    book = forgetPids(book, [...book.values()].map((t) => t.pid).filter((pid) => !live.has(pid)));
    const due = dueAt(book, now());
    book = due.book;
    for (const t of due.unsignalled) o.log?.info({ pid: t.pid, scope: t.scopeId }, 'watchdog timer expired without a signal: the worker is left running (as torch does)');
    for (const e of due.kill) {
      const message = watchdogMessage(e.timer.scopeId, e.timer.afterMs);
      o.log?.warn({ pid: e.pid, scopes: e.scopes, signal: e.timer.signal }, message);
      o.onExpired(e, message);
      try {
        kill(e.pid, e.timer.signal);
      } catch {
        // It exited meanwhile: its exit is reported as it is.
      }
    }
  };
  const timer = setInterval(check, o.intervalMs ?? 100);
  timer.unref();

  return {
    get ignored() {
      return ignored;
    },
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
