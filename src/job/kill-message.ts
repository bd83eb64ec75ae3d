/**
 * The root cause of a worker its agent killed, in one line: its watchdog timer expired
 * (src/agent/timer), or its node stopped reporting progress (src/agent/workers/progress.ts).
 * Pure and import-free: the job's decisions (src/job/decide.ts, workflow code) read it too.
 */

const PREFIX = 'watchdog timer "';

/** `watchdog timer "step" expired after 60 s` (seconds to one decimal, `.0` dropped). */
export function watchdogMessage(scope: string, afterMs: number): string {
  return `${PREFIX}${scope}" expired after ${seconds(afterMs)} s`;
}

/** Whether a failure's message is the watchdog's (a timer expired). */
export function isWatchdogMessage(message: string | null | undefined): boolean {
  return typeof message === 'string' && message.startsWith(PREFIX);
}

const NO_PROGRESS_PREFIX = 'no progress from ';

/**
 * `no progress from ranks 0, 1 for 30 s (--progress-timeout; last step 41 31 s ago)`: the ranks of
 * a node none of which reported progress for `timeoutMs`; `flag` names the setting that gave it
 * (`--progress-start-timeout` before the first report, when set).
 */
export function noProgressMessage(ranks: number[], timeoutMs: number, last: { step: number | null; ageMs: number | null }, flag = '--progress-timeout'): string {
  const who = ranks.length === 1 ? `rank ${ranks[0]}` : `ranks ${ranks.join(', ')}`;
  const since = last.ageMs === null ? 'none reported since the workers started' : `last ${last.step === null ? 'report' : `step ${last.step}`} ${seconds(last.ageMs)} s ago`;
  return `${NO_PROGRESS_PREFIX}${who} for ${seconds(timeoutMs)} s (${flag}; ${since})`;
}

/**
 * Whether a failure's message is the agent's own account of why it killed the worker (a
 * watchdog timer, no progress): then the signal it sent is part of that account, not a separate
 * cause worth naming.
 */
export function killedByAgent(message: string | null | undefined): boolean {
  return isWatchdogMessage(message) || (typeof message === 'string' && message.startsWith(NO_PROGRESS_PREFIX));
}

/** Seconds to one decimal, `.0` dropped; whole seconds from 10 s. */
function seconds(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  return s >= 10 ? String(Math.round(s)) : String(Math.round(s * 10) / 10);
}
