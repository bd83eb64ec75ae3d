/**
 * The root cause of a worker its watchdog timer killed, in one line. Pure and import-free: the
 * job's decisions (src/job/decide.ts, workflow code) read it too.
 */

const PREFIX = 'watchdog timer "';

/** `watchdog timer "step" expired after 60 s` (seconds to one decimal, `.0` dropped). */
export function watchdogMessage(scope: string, afterMs: number): string {
  const s = Math.max(0, afterMs) / 1000;
  const shown = s >= 10 ? String(Math.round(s)) : String(Math.round(s * 10) / 10);
  return `${PREFIX}${scope}" expired after ${shown} s`;
}

/**
 * Whether a failure's message is the agent's own account of why it killed the worker: then the
 * signal it sent is part of that account, not a separate cause worth naming.
 */
export function isWatchdogMessage(message: string | null | undefined): boolean {
  return typeof message === 'string' && message.startsWith(PREFIX);
}
