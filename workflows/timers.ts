/**
 * Timers the Web UI can name. Its timeline shows a bare timer as `1 (30s)`; with a summary it
 * reads `last call for more nodes (30s)`, as activities read by theirs.
 *
 * Behind the patch 'timer-summaries': a run recorded before it replays with bare timers. (Core
 * does not compare a timer's summary on replay, so the recorded histories replay either way; the
 * patch keeps to the rule that what a workflow sends changes only behind one.)
 */
import * as wf from '@temporalio/workflow';

/** Options for `wf.sleep(ms, …)` and `wf.condition(fn, ms, …)`: `summary` says what the timer is for. */
export function timer(summary: string): wf.TimerOptions {
  return wf.patched('timer-summaries') ? { summary } : {};
}
