/** Errors of the PostgreSQL job ledger. */

/**
 * Thrown by `writeRecords` before anything is written when a record does not parse: names the
 * record's index in the batch and the bad field.
 */
export class InvalidRecordError extends Error {
  override readonly name = 'InvalidRecordError';

  constructor(
    readonly index: number,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`record ${index}: ${field}: ${reason}`);
  }
}

/**
 * Thrown by `writeRecords` (and the whole batch rolled back) when a `jobEnded` or `roundEnded`
 * arrives before the `job` or `roundStarted` it ends: the outbox writes in order, so this is a bug.
 */
export class MissingParentError extends Error {
  override readonly name = 'MissingParentError';

  constructor(
    readonly jobId: string,
    readonly seq: number,
    readonly round: number | null,
  ) {
    super(
      round === null
        ? `jobEnded seq ${seq}: jobId ${jobId} has no job record`
        : `roundEnded seq ${seq}: jobId ${jobId} has no round ${round}`,
    );
  }
}
