/**
 * The job's ledger outbox (DESIGN.md, Ledger). A job asks once, at its start, whether a ledger
 * runs (a `ledgerProbe` on the ledger queue, answered within 5 s by a controller with a
 * database); a job started with no ledger records nothing. Otherwise it derives records from its
 * state (src/ledger/derive.ts), keeps them in its state (carried across continue-as-new) and
 * flushes them in order through `recordLedger` on the ledger queue, retried for as long as the
 * database is down: the job never waits on it. Records are numbered, so a batch sent twice is
 * written once. What is still unsent when the job ends goes to a `ledgerOutbox` child that
 * outlives it and delivers them.
 */
import * as wf from '@temporalio/workflow';
import { ParentClosePolicy } from '@temporalio/workflow';
import type { LedgerActivities } from '../activities/types';
import { LEDGER_QUEUE } from '../activities/types';
import { derive, type LedgerCursor } from '../src/ledger/derive';
import type { LedgerRecord } from '../src/ledger/records';
import type { JobState } from '../src/job/state';

export interface LedgerOutbox {
  cursor: LedgerCursor | null;
  outbox: LedgerRecord[];
}

const BATCH = 100;

const probe = wf.proxyActivities<LedgerActivities>({
  taskQueue: LEDGER_QUEUE,
  scheduleToStartTimeout: '5s',
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 1 },
  summary: 'is a ledger recording this job?',
});

const ledger = wf.proxyActivities<LedgerActivities>({
  taskQueue: LEDGER_QUEUE,
  startToCloseTimeout: '30s',
  // The database may be down for long: records wait, retried at most every 30 s, for ever.
  retry: { initialInterval: '1s', maximumInterval: '30s', backoffCoefficient: 2 },
  summary: 'ledger records',
});

/** Whether a ledger answers (false: none runs, or none within 5 s; the job then records nothing). */
export async function ledgerAvailable(): Promise<boolean> {
  return probe.ledgerProbe().then(() => true, () => false);
}

type Get = () => JobState;
type Set = (s: JobState) => void;

/** Append what changed since the last call to the outbox. */
export function note(get: Get, set: Set): void {
  const s = get();
  if (!s.ledger) return;
  const { cursor, records } = derive(s.ledger.cursor, s, new Date(Date.now()).toISOString());
  if (records.length === 0) return; // the cursor moves only with records: nothing changed
  set({ ...s, ledger: { cursor, outbox: [...s.ledger.outbox, ...records] } });
}

/** Note every change and flush the outbox in order, until `stop()` holds. */
export async function keepLedger(get: Get, set: Set, stop: () => boolean): Promise<void> {
  let seen: JobState | null = null;
  while (!stop()) {
    await wf.condition(() => stop() || get() !== seen || (get().ledger?.outbox.length ?? 0) > 0);
    note(get, set);
    seen = get(); // after note, which itself changes the state
    const batch = get().ledger?.outbox.slice(0, BATCH) ?? [];
    if (batch.length === 0 || stop()) continue;
    await ledger.recordLedger(batch).catch((err: unknown) => wf.log.error('ledger: batch refused for good; dropped', { error: String(err) }));
    const last = batch[batch.length - 1].seq;
    const s = get();
    if (s.ledger) set({ ...s, ledger: { ...s.ledger, outbox: s.ledger.outbox.filter((r) => r.seq > last) } });
  }
}

/** The job ends: note its final state and hand what is unsent to a child that outlives the job. */
export async function handOff(get: Get, set: Set): Promise<void> {
  note(get, set);
  const s = get();
  if (!s.ledger || s.ledger.outbox.length === 0) return;
  const records = s.ledger.outbox;
  await wf.startChild(ledgerOutbox, {
    workflowId: `${s.spec.jobId}/ledger-${records[0].seq}`,
    args: [records],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    staticSummary: `${records.length} ledger record(s) of job ${s.spec.jobId}`,
  });
}

/** Delivers a finished job's last ledger records, however long the database is away. */
export async function ledgerOutbox(records: LedgerRecord[]): Promise<void> {
  for (let i = 0; i < records.length; i += BATCH) {
    await ledger.recordLedger(records.slice(i, i + BATCH)).catch((err: unknown) => wf.log.error('ledger: batch refused for good; dropped', { error: String(err) }));
  }
}
