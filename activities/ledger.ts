/**
 * The ledger's activities, run only by a process with a database (a controller with
 * DATABASE_URL): node agents never hold its credentials. Writes are idempotent (src/ledger/store.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import type pg from 'pg';
import { InvalidRecordError, MissingParentError } from '../src/ledger/errors';
import { writeRecords } from '../src/ledger/store';
import type { LedgerActivities } from './types';

export function createLedgerActivities(pool: pg.Pool): LedgerActivities {
  return {
    async ledgerProbe() {},
    async recordLedger(records) {
      try {
        return await writeRecords(pool, records);
      } catch (err) {
        // A batch that can never be written is refused for good; a database that is down is retried.
        if (err instanceof InvalidRecordError || err instanceof MissingParentError) throw ApplicationFailure.nonRetryable(err.message, err.name);
        throw err;
      }
    },
  };
}
