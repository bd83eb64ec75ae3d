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
  /** Forwarded events wait this long for more to arrive in the same batch. @default 200 */
  batchDelayMs?: number;
  /** The lobby ends after this long without events. @default 60000 */
  idleMs?: number;
}

export async function jobLobby(input: LobbyInput): Promise<void> {
  const pending: LobbyEvent[] = [];
  wf.setHandler(lobbySignal, (e) => void pending.push(e));
  const job = wf.getExternalWorkflowHandle(input.jobId);
  for (;;) {
    const more = await wf.condition(() => pending.length > 0, input.idleMs ?? 60_000);
    if (!more) return; // quiet: end; a signal that raced with the end is delivered to the next run
    await wf.sleep(input.batchDelayMs ?? 200);
    const batch = pending.splice(0);
    // A job that has ended (or never started) has nobody to join: those events are dropped.
    await job.signal(lobbyBatchSignal, batch).catch((err: unknown) => wf.log.warn('lobby: job did not take the batch', { error: String(err) }));
    if (wf.workflowInfo().continueAsNewSuggested) {
      await wf.condition(wf.allHandlersFinished);
      if (pending.length === 0) await wf.continueAsNew<typeof jobLobby>(input);
    }
  }
}
