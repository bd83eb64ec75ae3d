/** How a node's part ended, as data: the CLI prints `summary` and exits with `code`. */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { describeFailure } from '../job/decide';
import type { Failure } from '../job/state';
import { DO_NOT_REQUEUE, DO_NOT_REQUEUE_EXIT_CODE } from '../job/progress';

/**
 * `code` is the process exit code: 0 done (succeeded, drained, left a pool), 1 the job failed or
 * was cancelled or cannot be opened here, 2 the job rejected the node, 3 the job failed with a
 * verdict that a requeue cannot change (no progress; no node it may use), 143 stopped (a signal).
 */
export interface AgentOutcome {
  code: number;
  summary: string;
}


/** The outcome of a job whose result is `err` (`telastic run`, `telastic submit --wait`). */
export function outcomeOfFailure(jobId: string, err: unknown): AgentOutcome {
  const cause = err instanceof WorkflowFailedError ? err.cause : err;
  if (cause instanceof CancelledFailure) return { code: 1, summary: `job ${jobId} was cancelled` };
  if (cause instanceof ApplicationFailure) {
    const failure = (cause.details?.[0] as { failure?: Failure | null } | undefined)?.failure;
    const root = failure ? describeFailure(failure) : '';
    // Restarts-exhausted messages already end with the root cause; others (join timeout) add it.
    const suffix = root && !cause.message.includes(root) ? ` (root cause: ${root})` : '';
    // A verdict requeueing cannot change (src/job/progress.ts) has its own exit code.
    const code = DO_NOT_REQUEUE.includes(cause.type ?? '') ? DO_NOT_REQUEUE_EXIT_CODE : 1;
    return { code, summary: `job ${jobId} failed: ${cause.message}${suffix}` };
  }
  return { code: 1, summary: `job ${jobId} failed: ${cause instanceof Error ? cause.message : String(cause)}` };
}
