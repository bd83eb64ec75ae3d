/**
 * The no-progress verdict (`--max-restarts-without-progress K`): failure restarts that resume
 * from the same checkpoint as the round before them made no progress; K of them in a row end the
 * job with a verdict schedulers can act on (do not requeue: it would crash-loop again). Only for
 * jobs with a checkpoint directory: without one there is nothing to judge progress by. A restart
 * for a membership change (a join, a drain, a scale) neither counts nor resets the count; a newer
 * checkpoint resets it. Pure: workflow code applies it (src/job/events.ts, workflows/round.ts).
 */

/** Failure restarts in a row that resumed from the same checkpoint (`from`; null: from scratch). */
export interface Stall {
  from: string | null;
  restarts: number;
  /** The job's restart count when the last round started. */
  atRestarts: number;
}

/** What of the job's state (src/job/state.ts) the verdict reads. */
interface Judged {
  spec: { checkpointDir?: string; maxRestartsWithoutProgress: number };
  restarts: number;
  stall?: Stall | null;
}

/** `--max-restarts-without-progress` when not given. 0 turns the verdict off. */
export const DEFAULT_MAX_RESTARTS_WITHOUT_PROGRESS = 3;

/** The failure type (ApplicationFailure.type) of a job ended by a verdict, and its exit code. */
export const NO_PROGRESS = 'NoProgress';
/**
 * Exit code of `telastic run` and `telastic submit --wait` for a job that failed with a verdict
 * that requeueing it cannot change (no progress; no node it may use): distinct from 1 (failed,
 * worth another try) so that a scheduler can skip the requeue.
 */
export const DO_NOT_REQUEUE_EXIT_CODE = 3;

/** Failure types that exit with DO_NOT_REQUEUE_EXIT_CODE: no progress; no usable node (src/job/health.ts). */
export const DO_NOT_REQUEUE: readonly string[] = [NO_PROGRESS, 'NoUsableNode'];

/**
 * The stall record after a round found what it resumes from (`resumeFrom`, the checkpoint path;
 * null when it starts from scratch). A round after a failure restart that resumes from the same
 * point as the last round counts one; a different point starts the count again.
 */
export function nextStall(s: Pick<Judged, 'restarts' | 'stall'>, resumeFrom: string | null): Stall {
  const prev = s.stall;
  if (!prev || prev.from !== resumeFrom) return { from: resumeFrom, restarts: 0, atRestarts: s.restarts };
  if (s.restarts === prev.atRestarts) return prev; // no failure since the last round: a membership change
  return { from: resumeFrom, restarts: prev.restarts + 1, atRestarts: s.restarts };
}

/** Why the job must end for lack of progress, as one line; null while it may go on. */
export function noProgressVerdict(s: Pick<Judged, 'spec' | 'stall'>): string | null {
  const k = s.spec.maxRestartsWithoutProgress;
  if (!s.spec.checkpointDir || k === 0 || !s.stall || s.stall.restarts < k) return null;
  const from = s.stall.from;
  const where = from === null ? `every round started from scratch: no checkpoint in ${s.spec.checkpointDir}` : `every round resumed from ${baseName(from)}`;
  return `no progress in ${s.stall.restarts} restarts (${where})`;
}

/** The last path component (workflow code has no `path` module). */
function baseName(p: string): string {
  const parts = p.split('/').filter(Boolean);
  return parts[parts.length - 1] ?? p;
}
