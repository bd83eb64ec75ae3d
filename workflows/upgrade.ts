/**
 * The workflow side of upgrades (docs/upgrading.md, src/job/upgrade.ts). Every workflow of a
 * control worker is pinned to the worker's build; a job leaves its build only by continuing as
 * new with AUTO_UPGRADE, which starts the next run on the deployment's current build.
 *
 * Temporal sets `targetWorkerDeploymentVersionChanged` on a workflow task but starts none for it:
 * a job in a long round has no task to see it on. So a running round wakes every
 * UPGRADE_CHECK_MS, and the `wake` signal (sent by the operator after making a build current)
 * wakes it at once.
 */
import * as wf from '@temporalio/workflow';
import type { RoundAssignment } from '../src/job/assignment';

/** Any signal wakes a workflow; this one does nothing else. */
export const wakeSignal = wf.defineSignal('wake');

export const UPGRADE_CHECK_MS = 5 * 60_000;

/** The running round a run hands to the next one, which runs its workers again (the agents attach to the live ones). */
export interface Adoption {
  round: number;
  assignments: RoundAssignment[];
  /** Nodes whose workers had exited 0 already. */
  succeeded: string[];
}

export function listenForWake(): void {
  wf.setHandler(wakeSignal, () => undefined);
}

/** The deployment's current build differs from this run's. */
export function targetChanged(): boolean {
  return wf.workflowInfo().targetWorkerDeploymentVersionChanged ?? false;
}

/**
 * Wait for `done`, waking every UPGRADE_CHECK_MS to ask `move`; resolves true when `move` said so
 * first. `move(atCheck)`: atCheck is true at the periodic check only, where a long history is
 * weighed; on any other wake only a changed build moves the round. (A run whose history Temporal
 * finds long as soon as it starts would otherwise hand the round on at every event, for ever.)
 */
export async function untilDoneOrMove(done: () => boolean, move: (atCheck: boolean) => boolean): Promise<boolean> {
  const checkOnly = wf.patched('long-round-at-check'); // histories recorded before keep their shape
  for (;;) {
    const woken = await wf.condition(() => done() || move(!checkOnly), UPGRADE_CHECK_MS, { summary: 'upgrade check: does a newer build of telastic run?' });
    if (done()) return false;
    if (move(!checkOnly || !woken)) return true;
  }
}

/**
 * Continue as new: onto the current build when it changed (AUTO_UPGRADE for the first task,
 * then pinned there), else on this build.
 */
export function continueAsNewOnCurrent<F extends wf.Workflow>(...args: Parameters<F>): Promise<never> {
  const onCurrent = targetChanged();
  return wf.makeContinueAsNewFunc<F>(onCurrent ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : {})(...args);
}
