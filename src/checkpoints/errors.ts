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
