/**
 * A lobby: where nodes' joins and leaves enter a job. An agent signals (with start) the lobby
 * its node id hashes to (src/job/groups.ts lobbyIndex); the lobby forwards what arrived to the
 * job as one signal per batch. So no execution takes more than about a group's worth of
 * join signals, and none takes an update per node (Temporal allows 10 in flight per execution).
 *
 * A lobby decides nothing (the job validates every join) and keeps nothing: it ends after a
 * quiet spell, and the next join starts it again.
 */
import * as wf from '@temporalio/workflow';
import { lobbyBatchSignal, lobbySignal, type LobbyEvent } from './messages';

export interface LobbyInput {
  jobId: string;
  /** A batch is forwarded once no event arrived for this long… @default 300 */
  quietMs?: number;
  /** …or this long after its first event. @default 2000 */
  maxDelayMs?: number;
  /** The lobby ends after this long without events (the next join starts it again). @default 5000 */
  idleMs?: number;
}

export async function jobLobby(input: LobbyInput): Promise<void> {
  const { quietMs = 300, maxDelayMs = 2000, idleMs = 5000 } = input;
  const pending: LobbyEvent[] = [];
  wf.setHandler(lobbySignal, (e) => void pending.push(e));
  const job = wf.getExternalWorkflowHandle(input.jobId);
  let batches = 0;
  for (;;) {
    // Quiet: end. A signal that races with the end makes Temporal retry the end with it.
    if (!(await wf.condition(() => pending.length > 0, idleMs, { summary: 'idle: the lobby ends unless a node joins or leaves' }))) return;
    // The first event of a run goes at once (a lone node, or the head of a burst); after it,
    // nodes that start within seconds of each other are gathered into one signal to the job.
    const first = Date.now();
    for (let seen = batches === 0 ? pending.length : 0; seen !== pending.length && Date.now() - first < maxDelayMs; ) {
      seen = pending.length;
      await wf.condition(() => pending.length !== seen, quietMs, { summary: 'quiet: more joins go in the same batch to the job' });
    }
    const batch = pending.splice(0);
    try {
      await job.signal(lobbyBatchSignal, batch);
      batches++;
    } catch (err) {
      // A job that has ended (or never started) has nobody to join: drop. Anything else (the
      // job's run is at its signal limit until it continues as new): keep the batch, try again.
      const gone = /not found/i.test(String((err as Error)?.message));
      wf.log.warn(gone ? 'lobby: job not found; batch dropped' : 'lobby: job did not take the batch; retrying', { error: String(err) });
      if (!gone) {
        pending.unshift(...batch);
        await wf.sleep(maxDelayMs, { summary: 'retry: forward the batch to the job again' });
      }
    }
    if (wf.workflowInfo().continueAsNewSuggested && pending.length === 0) {
      await wf.condition(wf.allHandlersFinished);
      await wf.continueAsNew<typeof jobLobby>(input);
    }
  }
}
