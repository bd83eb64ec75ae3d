/**
 * The ledger's activities, run only by the process that hosts the ledger (a controller or
 * `telastic dev`): node agents never hold its credentials. Writes are idempotent
 * (src/ledger/store.ts); quarantine follows the host's policy (src/ledger/quarantine.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import type pg from 'pg';
import { InvalidRecordError, MissingParentError } from '../src/ledger/errors';
import { checkQuarantine, type QuarantinePolicy } from '../src/ledger/quarantine';
import { writeRecords } from '../src/ledger/store';
import type { LedgerActivities } from './types';

export function createLedgerActivities(pool: pg.Pool, policy: QuarantinePolicy): LedgerActivities {
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
    async ledgerQuarantine(nodeIds) {
      return checkQuarantine(pool, nodeIds, policy, Date.now());
    },
  };
}
