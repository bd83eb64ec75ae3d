/** How a node's part ended, as data: the CLI prints `summary` and exits with `code`. */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { describeFailure } from '../job/decide';
import type { Failure } from '../job/state';
import { NO_USABLE_NODE } from '../job/health';

/**
 * `code` is the process exit code: 0 done (succeeded, drained, left a pool), 1 the job failed or
 * was cancelled or cannot be opened here, 2 the job rejected the node, EXIT_NO_USABLE_NODE the job
 * failed because no node it may use is left (src/job/health.ts), 143 stopped (a signal).
 */
export interface AgentOutcome {
  code: number;
  summary: string;
}

/**
 * `telastic run` / `submit --wait` when the job failed with no node it may use (every node it
 * could use quarantined or failing its health check): a scheduler should fix or replace nodes,
 * not requeue the job as it is. 3 is the no-progress verdict's (docs/cli.md).
 */
export const EXIT_NO_USABLE_NODE = 4;

/** The outcome of a job whose result is `err` (`telastic run`, `telastic submit --wait`). */
export function outcomeOfFailure(jobId: string, err: unknown): AgentOutcome {
  const cause = err instanceof WorkflowFailedError ? err.cause : err;
  if (cause instanceof CancelledFailure) return { code: 1, summary: `job ${jobId} was cancelled` };
  if (cause instanceof ApplicationFailure) {
    const failure = (cause.details?.[0] as { failure?: Failure | null } | undefined)?.failure;
    const root = failure ? describeFailure(failure) : '';
    // Restarts-exhausted messages already end with the root cause; others (join timeout) add it.
    const suffix = root && !cause.message.includes(root) ? ` (root cause: ${root})` : '';
    return { code: cause.type === NO_USABLE_NODE ? EXIT_NO_USABLE_NODE : 1, summary: `job ${jobId} failed: ${cause.message}${suffix}` };
  }
  return { code: 1, summary: `job ${jobId} failed: ${cause instanceof Error ? cause.message : String(cause)}` };
}
