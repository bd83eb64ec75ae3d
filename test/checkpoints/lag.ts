/** Measuring how long the event loop is held, for many.test.ts and its lag-scan fixture. */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

/** The event loop's worst delay while `fn` runs: a 10 ms timer's lateness, and perf_hooks' view. */
export async function lagDuring<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number; timerLagMs: number; loopDelayMs: number }> {
  const every = 10;
  const histogram = monitorEventLoopDelay({ resolution: every });
  let last = performance.now();
  let timerLagMs = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    timerLagMs = Math.max(timerLagMs, now - last - every);
    last = now;
  }, every);
  histogram.enable();
  const t0 = performance.now();
  try {
    const result = await fn();
    return { result, ms: Math.round(performance.now() - t0), timerLagMs: Math.round(timerLagMs), loopDelayMs: Math.round(histogram.max / 1e6) };
  } finally {
    clearInterval(probe);
    histogram.disable();
  }
}
