/**
 * The pool's lease on a pool agent (workflows/pool.ts): one `holdNode` activity per run of the
 * agent, heartbeating until the pool cancels it. If the agent dies or freezes, the heartbeats
 * stop and the pool marks the node lost.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { PoolActivities } from './types';

export function createPoolActivities(incarnation: string): PoolActivities {
  async function holdNode(input: { pool: string; nodeId: string; incarnation: string }): Promise<void> {
    if (input.incarnation !== incarnation) {
      throw ApplicationFailure.nonRetryable(`a lease of an earlier run of ${input.nodeId}'s agent`, 'StaleLease');
    }
    const ctx = Context.current();
    const every = Math.max(100, (ctx.info.heartbeatTimeoutMs ?? 10_000) / 3);
    ctx.heartbeat();
    const beat = setInterval(() => ctx.heartbeat(), every);
    try {
      await ctx.cancelled;
    } catch (err) {
      // Cancelled by the pool: the lease is over. Cancelled because this agent stops: the pool
      // must hear of it, so that is a failure.
      if (err instanceof CancelledFailure && err.message !== 'WORKER_SHUTDOWN') return;
      throw ApplicationFailure.nonRetryable(`agent of ${input.nodeId} stopped`, 'AgentStopped');
    } finally {
      clearInterval(beat);
    }
  }
  return { holdNode };
}
