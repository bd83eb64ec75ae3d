/**
 * Each running node's last progress report (`TELASTIC_PROGRESS_FILE`, src/agent/workers/progress.ts),
 * read where the agents put it: the heartbeat details of their pending `runWorkers` activities, in
 * the job's own execution (a round of one group) or in its run groups (its pending children,
 * src/job/groups.ts). Nothing is written to the job's history for it.
 */
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { ProgressReport } from '../agent/workers/progress';

/** A node's newest progress, as of now: how long ago its ranks last reported (null: never), and the step. */
export interface NodeProgress {
  ageMs: number | null;
  step: number | null;
}

interface Beat {
  nodeId?: unknown;
  progress?: ProgressReport | null;
}

/** `progress 3.1 s ago (step 41)`, `no progress reported for 12 s`; null when nothing is known. */
export function describeProgress(p: NodeProgress | undefined): string | null {
  if (!p) return null;
  if (p.ageMs === null) return null;
  const s = p.ageMs / 1000;
  const age = s >= 10 ? `${Math.round(s)} s` : `${s.toFixed(1)} s`;
  return `progress ${age} ago${p.step === null ? '' : ` (step ${p.step})`}`;
}

/** Progress per node of the job's running round; empty when no node reports any. */
export async function jobProgress(client: Client, jobId: string, desc?: WorkflowExecutionDescription): Promise<Map<string, NodeProgress>> {
  const out = new Map<string, NodeProgress>();
  const job = desc ?? (await client.workflow.getHandle(jobId).describe());
  const children = (job.raw.pendingChildren ?? []).map((c) => c.workflowId).filter((id): id is string => !!id && /\/round-\d+\/run-\d+$/.test(id));
  const descs = [job, ...(await Promise.all(children.map((id) => client.workflow.getHandle(id).describe().catch(() => null))))];
  const now = Date.now();
  for (const d of descs) {
    for (const a of d?.raw.pendingActivities ?? []) {
      if (a.activityType?.name !== 'runWorkers' || !a.heartbeatDetails?.payloads?.length) continue;
      const [beat] = (await decodeArrayFromPayloads(client.options.loadedDataConverter, a.heartbeatDetails.payloads)) as Beat[];
      if (!beat || typeof beat.nodeId !== 'string' || !beat.progress) continue;
      const at = a.lastHeartbeatTime?.seconds != null ? Number(a.lastHeartbeatTime.seconds) * 1000 + Math.floor((a.lastHeartbeatTime.nanos ?? 0) / 1e6) : now;
      const since = Math.max(0, now - at);
      out.set(beat.nodeId, { ageMs: beat.progress.ageMs === null ? null : beat.progress.ageMs + since, step: beat.progress.step });
    }
  }
  return out;
}
