/**
 * What runs beside a job's main loop, started and stopped in one place: the pool link (a pool
 * job's requests to its pool), the ledger outbox (with the quarantine watch), checkpoint-first
 * drains and the rechecks of nodes failing their health check. Each reads the job's state and changes it only through events. `stop()` ends them and
 * waits until they have: before continue-as-new and when the job ends, nothing they started is
 * left running. A job's cancellation does not cancel them (a cancelled job still gives its nodes
 * back and records its end); `stop()` does.
 */
import * as wf from '@temporalio/workflow';
import type { JobRun } from './job-run';
import { linkToPool } from './pool-link';
import { keepLedger, openLedger } from './ledger';
import { keepPreempting } from './preempt';
import { keepCheckingHealth } from './health';

export interface SideLoops {
  stop(): Promise<void>;
}

/** `firstRun`: the job's first run (not a continue-as-new), which asks once whether a ledger records it. */
export function startSideLoops(run: JobRun, firstRun: boolean): SideLoops {
  const pool = run.state.spec.pool;
  let stoppable: wf.CancellationScope | undefined;
  const all = wf.CancellationScope.nonCancellable(() => {
    stoppable = new wf.CancellationScope();
    const scope = stoppable;
    return Promise.allSettled([
      // Not stopped by cancellation: a signal it is sending completes, then it sees the run ended.
      pool ? linkToPool(pool, run) : Promise.resolve(),
      scope.run(async () => {
        if (firstRun) await openLedger(run);
        await keepLedger(run);
      }),
      scope.run(() => keepPreempting(run)),
      scope.run(() => keepCheckingHealth(run)),
    ]);
  });
  return {
    async stop() {
      run.ended = true;
      stoppable?.cancel();
      await all;
    },
  };
}
