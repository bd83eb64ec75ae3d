/**
 * Checkpoint-first drains, applied (the decisions are in src/job/preempt.ts). Beside the job's
 * main loop, one at a time: note the newest checkpoint, send the checkpoint signal to every
 * worker of the round on every node (a DDP checkpoint is collective), wait for a complete
 * checkpoint newer than the request or the end of the grace, then drain the node; the round
 * restarts without it and resumes from that checkpoint. Each step is an activity or timer whose
 * summary names the drain, so the job's history tells the story.
 */
import * as wf from '@temporalio/workflow';
import { isCancellation } from '@temporalio/workflow';
import type { NodeActivities } from '../activities/types';
import { nodeQueue } from '../activities/types';
import type { CheckpointInfo } from '../src/checkpoints/types';
import { partition } from '../src/job/groups';
import { preemptOverReason } from '../src/job/preempt';
import type { Checkpoint, JobState, Preempt } from '../src/job/state';
import type { JobRun } from './job-run';

/** Serve checkpoint-first drains until the job run ends. */
export async function keepPreempting(run: JobRun): Promise<void> {
  for (;;) {
    await wf.condition(() => run.ended || run.state.preempts.length > 0);
    if (run.ended) return;
    const p = run.state.preempts[0];
    try {
      await preempt(run, p);
    } catch (err) {
      // Stopped for continue-as-new: the request is carried over, and the next run serves it.
      if (run.ended && isCancellation(err)) return;
      // Never leave a drain hanging: whatever failed is in the history; the node goes now.
      wf.log.warn('checkpoint-first drain failed', { nodeId: p.nodeId, error: String(err) });
      run.apply({ type: 'preemptEnded', preempt: p, checkpoint: null, now: Date.now(), note: `failed: ${String(err)}` });
    }
    run.publish();
  }
}

function onNode(rdzv: JobState['spec']['rdzv'], nodeId: string, summary: string, startToCloseMs: number): NodeActivities {
  return wf.proxyActivities<NodeActivities>({
    taskQueue: nodeQueue(nodeId),
    scheduleToStartTimeout: rdzv.prepareTimeoutMs,
    startToCloseTimeout: startToCloseMs,
    heartbeatTimeout: rdzv.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    summary,
  });
}

async function preempt(run: JobRun, p: Preempt): Promise<void> {
  const what = `checkpoint-first drain of ${p.nodeId}`;
  const end = (c: CheckpointInfo | null, note?: string) => {
    const checkpoint: Checkpoint | null = c ? { path: c.path, step: c.step, time: c.time } : null;
    run.apply({ type: 'preemptEnded', preempt: p, checkpoint, now: Date.now(), note });
  };
  const dir = run.state.spec.checkpointDir;
  if (!dir) return end(null, 'the job has no checkpoint directory');
  // Asked before the round runs (it forms, or restarts): its workers start after the request
  // anyway, so wait for them (within the grace) rather than drain without asking.
  const deadline = p.requestedAt + p.graceMs;
  const runningTimer = { summary: `${what}: wait for the round to run` };
  const over = (s: JobState, round: number) => preemptOverReason(s, p, round);
  await wf.condition(() => run.state.phase === 'running' || over({ ...run.state, phase: 'running' }, run.state.round) !== null, Math.max(1, deadline - Date.now()), runningTimer);
  // What this drain needs of the round it serves, read once: its nodes and timing are the round's.
  const { round, phase, members, spec } = run.state;
  const { jobId, rdzv } = spec;
  const early = over({ ...run.state, phase: 'running' }, round);
  if (early !== null) return end(null, early);
  if (phase !== 'running') return end(null, 'no round ran within the grace');
  const scanner = members[0].nodeId; // group rank 0 mounts the shared directory
  const baseline = await onNode(rdzv, scanner, `${what}: note the newest checkpoint in ${dir}`, 60_000)
    .findCheckpoint({ jobId, dir })
    .then((r) => r.latest, () => null);
  // Every node of the round, a group's worth at a time (no execution holds more than group_size
  // node activities, as in workflows/round.ts).
  for (const nodeIds of partition(members.map((m) => m.nodeId), rdzv.groupSize)) {
    await Promise.all(
      nodeIds.map((nodeId) =>
        onNode(rdzv, nodeId, `${what}: checkpoint signal to the workers on ${nodeId}`, 10_000)
          .signalWorkers({ jobId, round, reason: what })
          .catch((err: unknown) => wf.log.warn('checkpoint signal not sent', { nodeId, error: String(err) })),
      ),
    );
  }
  const left = deadline - Date.now();
  if (left <= 0) return end(null);
  const after = baseline ? `step ${baseline.step ?? '?'} (${baseline.path.split('/').pop()})` : 'the request (none before it)';
  const scope = new wf.CancellationScope();
  const found = scope.run(() =>
    onNode(rdzv, scanner, `${what}: wait up to ${Math.ceil(left / 1000)}s for a checkpoint newer than ${after}`, left + 30_000)
      .waitForCheckpoint({ jobId, dir, baseline, requestedAt: p.requestedAt, timeoutMs: left })
      .then((c) => ({ c }), (err: unknown) => ({ err })),
  );
  let result: { c: CheckpointInfo | null } | { err: unknown } | undefined;
  void found.then((r) => (result = r));
  // A plain drain, the round ending or the node going stops the wait at once.
  await wf.condition(() => result !== undefined || over(run.state, round) !== null);
  if (result === undefined) {
    scope.cancel();
    return end(null, over(run.state, round) ?? undefined);
  }
  if ('err' in result) return end(null, `checkpoint watch failed: ${String(result.err)}`);
  return end(result.c);
}
