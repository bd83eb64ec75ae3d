/**
 * Checkpoint-first drains, applied (the decisions are in src/job/preempt.ts). Beside the job's
 * main loop, one at a time: note the newest checkpoint, send the checkpoint signal to every
 * worker of the round on every node (a DDP checkpoint is collective), wait for a complete
 * checkpoint newer than the request or the end of the grace, then drain the node; the round
 * restarts without it and resumes from that checkpoint. Each step is an activity or timer whose
 * summary names the drain, so the job's history tells the story.
 */
import * as wf from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import type { CheckpointInfo } from '../src/checkpoints/types';
import { partition } from '../src/job/groups';
import { finishPreempt, preemptOverReason } from '../src/job/preempt';
import type { JobState, Preempt } from '../src/job/state';
import { publish } from './publish';

type Get = () => JobState;
type Set = (s: JobState) => void;

/** Serve checkpoint-first drains until the job run ends. */
export async function keepPreempting(get: Get, set: Set, ended: () => boolean): Promise<void> {
  for (;;) {
    await wf.condition(() => ended() || (get().preempts?.length ?? 0) > 0);
    if (ended()) return;
    const p = get().preempts![0];
    try {
      await preempt(get, set, p);
    } catch (err) {
      // Never leave a drain hanging: whatever failed is in the history; the node goes now.
      wf.log.warn('checkpoint-first drain failed', { nodeId: p.nodeId, error: String(err) });
      if (get().preempts?.some((x) => x.nodeId === p.nodeId)) set(finishPreempt(get(), p, { checkpoint: null, now: Date.now(), note: `failed: ${String(err)}` }));
    }
    publish(get());
  }
}

function onNode(s: JobState, nodeId: string, summary: string, startToCloseMs: number): NodeActivities {
  return wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: s.spec.rdzv.prepareTimeoutMs,
    startToCloseTimeout: startToCloseMs,
    heartbeatTimeout: s.spec.rdzv.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    summary,
  });
}

async function preempt(get: Get, set: Set, p: Preempt): Promise<void> {
  const s0 = get();
  const what = `checkpoint-first drain of ${p.nodeId}`;
  const end = (checkpoint: CheckpointInfo | null, note?: string) => set(finishPreempt(get(), p, { checkpoint, now: Date.now(), note }));
  const dir = s0.spec.checkpointDir;
  if (!dir) return end(null, 'the job has no checkpoint directory');
  // Asked before the round runs (it forms, or restarts): its workers start after the request
  // anyway, so wait for them (within the grace) rather than drain without asking.
  const deadline = p.requestedAt + p.graceMs;
  const runningTimer = { summary: `${what}: wait for the round to run` };
  await wf.condition(() => get().phase === 'running' || preemptOverReason({ ...get(), phase: 'running' }, p, get().round) !== null, Math.max(1, deadline - Date.now()), runningTimer);
  const s = get();
  const round = s.round;
  const early = preemptOverReason({ ...s, phase: 'running' }, p, round);
  if (early !== null) return end(null, early);
  if (s.phase !== 'running') return end(null, 'no round ran within the grace');
  const scanner = s.members[0].nodeId; // group rank 0 mounts the shared directory
  const baseline = await onNode(s, scanner, `${what}: note the newest checkpoint in ${dir}`, 60_000)
    .findCheckpoint({ jobId: s.spec.jobId, dir })
    .then((r) => r.latest, () => null);
  // Every node of the round, a group's worth at a time (no execution holds more than group_size
  // node activities, as in workflows/round.ts).
  for (const nodeIds of partition(s.members.map((m) => m.nodeId), s.spec.rdzv.groupSize)) {
    await Promise.all(
      nodeIds.map((nodeId) =>
        onNode(s, nodeId, `${what}: checkpoint signal to the workers on ${nodeId}`, 10_000)
          .signalWorkers({ jobId: s.spec.jobId, round, reason: what })
          .catch((err: unknown) => wf.log.warn('checkpoint signal not sent', { nodeId, error: String(err) })),
      ),
    );
  }
  const left = deadline - Date.now();
  if (left <= 0) return end(null);
  const after = baseline ? `step ${baseline.step ?? '?'} (${baseline.path.split('/').pop()})` : 'the request (none before it)';
  const scope = new wf.CancellationScope();
  const found = scope.run(() =>
    onNode(s, scanner, `${what}: wait up to ${Math.ceil(left / 1000)}s for a checkpoint newer than ${after}`, left + 30_000)
      .waitForCheckpoint({ jobId: s.spec.jobId, dir, baseline, requestedAt: p.requestedAt, timeoutMs: left })
      .then((c) => ({ c }), (err: unknown) => ({ err })),
  );
  let result: { c: CheckpointInfo | null } | { err: unknown } | undefined;
  void found.then((r) => (result = r));
  // A plain drain, the round ending or the node going stops the wait at once.
  await wf.condition(() => result !== undefined || preemptOverReason(get(), p, round) !== null);
  if (result === undefined) {
    scope.cancel();
    return end(null, preemptOverReason(get(), p, round) ?? undefined);
  }
  if ('err' in result) return end(null, `checkpoint watch failed: ${String(result.err)}`);
  return end(result.c);
}
