/** Errors of the job ledger (PostgreSQL, or the embedded PGlite). */

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

/** Thrown by `telastic history` and `report` when the ledger has no record of the job. */
export class JobNotInLedgerError extends Error {
  override readonly name = 'JobNotInLedgerError';

  constructor(
    readonly jobId: string,
    /** Which ledger was asked (`DATABASE_URL`). */
    readonly where: string,
  ) {
    super(`job ${jobId}: not in the ledger (${where})`);
  }
}

/** Thrown by `telastic nodes --release NODE` when the node is not quarantined: nothing changed. */
export class NodeNotQuarantinedError extends Error {
  override readonly name = 'NodeNotQuarantinedError';

  constructor(
    readonly nodeId: string,
    readonly where: string,
  ) {
    super(`node ${nodeId}: not quarantined (${where})`);
  }
}

/**
 * Thrown by `hostEmbeddedLedger` (and so `hostLedger`) when another process, or this one, holds
 * the embedded ledger's directory: PGlite does not lock its files, and two processes on one
 * directory silently lose writes. `pid` is the holder's, when its address file names it.
 */
export class LedgerLockedError extends Error {
  override readonly name = 'LedgerLockedError';

  constructor(
    readonly dir: string,
    readonly pid: number | null,
  ) {
    super(`ledger at ${dir} is in use by ${pid === null ? 'another process' : `process ${pid}`}: run readers (telastic history, report, nodes) alongside it, or stop it first`);
  }
}

/** Thrown by `connectLedger` when there is neither DATABASE_URL nor an embedded ledger at `dir`. */
export class NoLedgerError extends Error {
  override readonly name = 'NoLedgerError';

  constructor(readonly dir: string) {
    super(`no ledger at ${dir}: set DATABASE_URL, or run telastic dev / telastic controller here first`);
  }
}
