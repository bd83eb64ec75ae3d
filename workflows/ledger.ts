/**
 * The job's ledger outbox (DESIGN.md, Ledger). A job asks once, at its start, whether a ledger
 * runs (a `ledgerProbe` on the ledger queue, answered within 60 s by a controller with a
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
import { applyQuarantine } from '../src/job/decide';
import type { JobState } from '../src/job/state';
import { timer } from './timers';

export interface LedgerOutbox {
  cursor: LedgerCursor | null;
  outbox: LedgerRecord[];
}

const BATCH = 100;

const probe = wf.proxyActivities<LedgerActivities>({
  taskQueue: LEDGER_QUEUE,
  // Long enough for a ledger host that starts with the job (`telastic dev`'s first open of the
  // embedded ledger takes 7-10 s); the job never waits on it. What ran before it answered is
  // recorded from the job's state then (the current round, not rounds already over).
  scheduleToStartTimeout: '60s',
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

const quarantine = wf.proxyActivities<LedgerActivities>({
  taskQueue: LEDGER_QUEUE,
  scheduleToCloseTimeout: '20s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
  summary: 'which of these nodes are quarantined?',
});

/** Whether a ledger answers (false: none runs, or none within 60 s; the job then records nothing). */
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

/**
 * Note every change and flush the outbox in order, until `stop()` holds. Between flushes, ask
 * which of the job's nodes are quarantined (quarantineWatch).
 */
export async function keepLedger(get: Get, set: Set, stop: () => boolean): Promise<void> {
  let seen: JobState | null = null;
  // Patched: jobs recorded before quarantine replay without its activities.
  const q = wf.patched('quarantine') ? quarantineWatch() : null;
  const pending = () => stop() || get() !== seen || (get().ledger?.outbox.length ?? 0) > 0 || !!q?.due(get());
  while (!stop()) {
    const recheck = q?.recheckIn(get());
    if (recheck === undefined || recheck === null) await wf.condition(pending);
    else await wf.condition(pending, recheck, timer('quarantine recheck: ask the ledger again which of the job\'s nodes are quarantined'));
    note(get, set);
    seen = get(); // after note, which itself changes the state
    const batch = get().ledger?.outbox.slice(0, BATCH) ?? [];
    if (batch.length > 0 && !stop()) {
      await ledger.recordLedger(batch).catch((err: unknown) => wf.log.error('ledger: batch refused for good; dropped', { error: String(err) }));
      const last = batch[batch.length - 1].seq;
      const s = get();
      if (s.ledger) set({ ...s, ledger: { ...s.ledger, outbox: s.ledger.outbox.filter((r) => r.seq > last) } });
      if (batch.some((r) => r.kind === 'failure')) q?.failureRecorded();
    }
    if (q?.due(get()) && !stop()) await q.check(get, set);
  }
}

/** While a node is kept out, how often the job asks whether it was released. */
const RECHECK_MS = 15_000;

/**
 * When the job asks the ledger which of its nodes are quarantined: when a node joins (before the
 * round forms, as a rule: the first round's last call gives it time), after a failure was written
 * (the count includes it), and every 15 s while one is kept out, to learn of its release. The
 * answer is the ledger host's decision (src/ledger/quarantine.ts); a ledger that does not answer
 * leaves the job as it is.
 */
function quarantineWatch() {
  const seen = new Set<string>(); // `${nodeId}@${joinedAt}`: a node that rejoins is asked about again
  let failure = false;
  let lastCheck = Date.now();
  const nodes = (s: JobState) => [...s.members, ...s.waiting];
  // Conditions run on every event: scan the nodes only when the lists changed since the last scan.
  let scanned: { members: JobState['members']; waiting: JobState['waiting']; unseen: boolean } | null = null;
  const unseen = (s: JobState): boolean => {
    if (scanned?.members !== s.members || scanned.waiting !== s.waiting) {
      scanned = { members: s.members, waiting: s.waiting, unseen: nodes(s).some((n) => !seen.has(`${n.nodeId}@${n.joinedAt}`)) };
    }
    return scanned.unseen;
  };
  return {
    due(s: JobState): boolean {
      if (failure || unseen(s)) return true;
      return !!s.quarantined?.length && Date.now() - lastCheck >= RECHECK_MS;
    },
    /** Ms until the next release check, or null when no node is kept out. */
    recheckIn(s: JobState): number | null {
      return s.quarantined?.length ? Math.max(1, lastCheck + RECHECK_MS - Date.now()) : null;
    },
    failureRecorded(): void {
      failure = true;
    },
    async check(get: Get, set: Set): Promise<void> {
      const asked = nodes(get());
      failure = false;
      lastCheck = Date.now();
      for (const n of asked) seen.add(`${n.nodeId}@${n.joinedAt}`);
      scanned = null;
      const answer = await quarantine.ledgerQuarantine(asked.map((n) => n.nodeId)).catch(() => null);
      if (answer) set(applyQuarantine(get(), answer));
    },
  };
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
