/**
 * torchrun's log directory layout:
 *
 *   <log-dir>/<run id>/attempt_<n>/<local rank>/stdout.log
 *                                             /stderr.log
 *                                             /error.json   (TORCHELASTIC_ERROR_FILE)
 *
 * torchrun's run directory is `mkdtemp(<run id>_)` and n is its restart count. telastic uses
 * the run id as is, so a job's logs are found by its id, and leaves n to the caller.
 */
import { join } from 'path';

/**
 * `<root>/<runId>/attempt_<attempt>`, the directory one round of a worker group writes to.
 * torchrun numbers attempts by restart count and overwrites an attempt on a membership change;
 * passing the round number instead keeps every round's logs.
 */
export function attemptLogDir(root: string, runId: string, attempt: number): string {
  return join(root, runId, `attempt_${attempt}`);
}

/** The files of one local rank inside an attempt directory. */
export function workerLogPaths(attemptDir: string, localRank: number) {
  const dir = join(attemptDir, String(localRank));
  return {
    dir,
    stdout: join(dir, 'stdout.log'),
    stderr: join(dir, 'stderr.log'),
    errorFile: join(dir, 'error.json'),
  };
}
