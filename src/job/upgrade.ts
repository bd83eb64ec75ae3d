/**
 * When a job moves to a new build of telastic (docs/upgrading.md). A job's workflow is pinned to
 * the build it started on (Temporal Worker Versioning), so new workflow code never replays an old
 * history; it moves by continuing as new onto the deployment's current build. Mid-round it moves
 * only when the next run can adopt the round's workers (the job runs their activities itself, one
 * group): a round spread over group workflows stays on its build until it ends, as restarting it
 * would cost the training more than waiting does.
 */

/** 'stay': keep running here; 'continue': continue as new now; 'adopt': continue as new, taking the running round along. */
export type UpgradeMove = 'stay' | 'continue' | 'adopt';

export interface UpgradeView {
  /** The deployment's current build is no longer the one this run is pinned to. */
  targetChanged: boolean;
  /** Temporal suggests continuing as new (the history is long); only a running round asks this here. */
  historyLong: boolean;
  /** Group workflows the running round uses: 0 between rounds, 1 when the job runs the round itself. */
  roundGroups: number;
}

export function upgradeMove(v: UpgradeView): UpgradeMove {
  if (v.roundGroups === 0) return v.targetChanged ? 'continue' : 'stay';
  // A long round wakes every UPGRADE_CHECK_MS (workflows/upgrade.ts); a round that long would
  // fill its history, so it hands itself to a fresh run the same way.
  if (!v.targetChanged && !v.historyLong) return 'stay';
  return v.roundGroups === 1 ? 'adopt' : 'stay';
}
