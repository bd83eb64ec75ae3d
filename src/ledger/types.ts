/**
 * Ledger value types the job's state carries (its outbox's cursor). Kept apart from derive.ts,
 * which reads the job's state, so that src/job can name them without importing src/ledger back:
 * this module imports nothing from src/job.
 */

/** What the job workflow last recorded, to derive only what changed since (derive.ts). */
export interface LedgerCursor {
  /** The last seq used; records are numbered from 1. */
  seq: number;
  /** The last round recorded as started, and whether it is still open. */
  round: number;
  open: boolean;
  members: string[];
  /** Failures and departures already recorded (keys), and the last checkpoint. */
  failures: string[];
  departures: string[];
  checkpoint: string | null;
  ended: boolean;
  /** Nodes recorded as quarantined in this job. */
  quarantined: string[];
  /**
   * The round last recorded as ended while the job goes on, before blame settled, and the key of
   * the failure its end named (null: none, a membership change): once blame settles on another
   * failure, a `roundCause` names that one instead. Absent when nothing waits to settle.
   */
  unsettled?: { round: number; failure: string | null };
}
