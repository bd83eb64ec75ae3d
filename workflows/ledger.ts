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
import { ActivityCancellationType, ParentClosePolicy, isCancellation } from '@temporalio/workflow';
import type { LedgerActivities } from '../activities/types';
import { LEDGER_QUEUE } from '../activities/types';
import { derive } from '../src/ledger/derive';
import type { LedgerRecord } from '../src/ledger/records';
import type { JobState } from '../src/job/state';
import * as qw from '../src/job/quarantine-watch';
import type { JobRun } from './job-run';

const BATCH = 100;

const probe = wf.proxyActivities<LedgerActivities>({
  taskQueue: LEDGER_QUEUE,
  // Long enough for a ledger host that starts with the job (`telastic dev`'s first open of the
  // embedded ledger takes 7-10 s); the job never waits on it. What ran before it answered is
  // recorded from the job's state then (the current round, not rounds already over).
  scheduleToStartTimeout: '60s',
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 1 },
  // A job that ends (or continues as new) before a ledger answered stops asking without a
  // cancel request: nobody may ever pick the probe up, and its cancellation would only add the
  // server's "not started" marker to the history.
  cancellationType: ActivityCancellationType.ABANDON,
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
async function ledgerAvailable(): Promise<boolean> {
  return probe.ledgerProbe().then(() => true, () => false);
}

/** Append what changed since the last call to the outbox. */
function note(run: JobRun): void {
  const s = run.state;
  if (!s.ledger) return;
  const { cursor, records } = derive(s.ledger.cursor, s, new Date(Date.now()).toISOString());
  if (records.length === 0) return; // the cursor moves only with records: nothing changed
  run.apply({ type: 'ledgerNoted', cursor, records });
}

/** Whether a ledger records this job: asked once, at the job's first start. */
export async function openLedger(run: JobRun): Promise<void> {
  if (await ledgerAvailable()) run.apply({ type: 'ledgerOpened' });
}

/**
 * Note every change and flush the outbox in order, until the run ends. Between flushes, ask
 * which of the job's nodes are quarantined (quarantineWatch).
 */
export async function keepLedger(run: JobRun): Promise<void> {
  if (!run.state.ledger) return; // no ledger records this job
  let seen: JobState | null = null;
  const q = quarantineWatch();
  const pending = () => run.ended || run.state !== seen || (run.state.ledger?.outbox.length ?? 0) > 0 || q.due(run.state);
  while (!run.ended) {
    const recheck = q.recheckIn(run.state);
    if (recheck === null) await wf.condition(pending);
    else await wf.condition(pending, recheck, { summary: "quarantine recheck: ask the ledger again which of the job's nodes are quarantined" });
    note(run);
    seen = run.state; // after note, which itself changes the state
    const batch = run.state.ledger?.outbox.slice(0, BATCH) ?? [];
    if (batch.length > 0 && !run.ended) {
      // Stopped (continue-as-new) while sending: the batch stays, and the next run sends it again
      // (records are numbered, so it is written once).
      const sent = await ledger.recordLedger(batch).then(
        () => true,
        (err: unknown) => !isCancellation(err) && (wf.log.error('ledger: batch refused for good; dropped', { error: String(err) }), true),
      );
      if (!sent) return;
      run.apply({ type: 'ledgerSent', lastSeq: batch[batch.length - 1].seq });
      if (batch.some((r) => r.kind === 'failure')) q.failureRecorded();
    }
    if (q.due(run.state) && !run.ended) await q.check(run);
  }
}

/** The quarantine watch (src/job/quarantine-watch.ts), asking the ledger host when it is due. */
function quarantineWatch() {
  let w = qw.startWatch(Date.now());
  // Conditions run on every event: look for unseen nodes only when the lists changed.
  let scanned: { members: JobState['members']; waiting: JobState['waiting']; unseen: boolean } | null = null;
  const unseen = (s: JobState): boolean => {
    if (scanned?.members !== s.members || scanned.waiting !== s.waiting) scanned = { members: s.members, waiting: s.waiting, unseen: qw.hasUnseen(w, s) };
    return scanned.unseen;
  };
  return {
    due: (s: JobState) => qw.checkDue(w, s, Date.now(), unseen(s)),
    recheckIn: (s: JobState) => qw.recheckIn(w, s, Date.now()),
    failureRecorded: () => void (w = qw.failureRecorded(w)),
    async check(run: JobRun): Promise<void> {
      const asked = qw.ask(w, run.state, Date.now());
      w = asked.watch;
      scanned = null;
      const answer = await quarantine.ledgerQuarantine(asked.nodeIds).catch(() => null);
      if (answer) run.apply({ type: 'quarantine', quarantined: answer });
    },
  };
}

/** The job ends: note its final state and hand what is unsent to a child that outlives the job. */
export async function handOff(run: JobRun): Promise<void> {
  note(run);
  const s = run.state;
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
