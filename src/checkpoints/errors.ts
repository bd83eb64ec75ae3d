/** Errors of checkpoint discovery and pruning. */

/**
 * The checkpoint directory exists but cannot be listed (it is a file, or permission is denied).
 * A missing directory is not an error: it simply holds no checkpoint yet.
 */
export class CheckpointDirError extends Error {
  override readonly name = 'CheckpointDirError';

  constructor(
    readonly dir: string,
    /** The errno code (`ENOTDIR`, `EACCES`), when there was one. */
    readonly code: string | undefined,
    readonly cause: unknown,
  ) {
    super(`checkpoint dir ${dir}: cannot list it (${code ?? String(cause)})`);
  }
}

/** Thrown by pruning when `keep` is not a whole number of at least 1 (which would delete the resume point). */
export class InvalidKeepError extends Error {
  override readonly name = 'InvalidKeepError';

  constructor(readonly keep: number) {
    super(`keep ${keep}: must be a whole number of at least 1`);
  }
}

/**
 * Errno codes that say "not now" rather than "not a checkpoint": out of file descriptors (this
 * process's or the system's), a busy or interrupted call, a stale NFS handle, memory pressure.
 * An entry failing this way is read again; one that keeps failing is not taken as broken.
 */
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR', 'ENOMEM', 'ETIMEDOUT', 'ESTALE']);

export function isTransient(err: unknown): boolean {
  return TRANSIENT.has((err as NodeJS.ErrnoException)?.code ?? '');
}

/**
 * Thrown by the scan when an entry that could be the newest checkpoint stayed unreadable for a
 * transient reason after retries: answering with an older checkpoint would make the job redo
 * the steps in between, so the caller (a retried activity, or the next poll) asks again instead.
 */
export class CheckpointScanError extends Error {
  override readonly name = 'CheckpointScanError';

  constructor(
    readonly path: string,
    readonly code: string | undefined,
    readonly cause: unknown,
  ) {
    super(`checkpoint ${path}: cannot read it (${code ?? String(cause)}), so the newest complete checkpoint is not known yet`);
  }
}
