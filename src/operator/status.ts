/** `.status` of a TelasticJob: the workflow's figures mirrored, and a patch of only what changed. */
import { describeFailure } from '../job/decide';
import type { Action, Condition, ObservedJob, TelasticJob, TelasticJobStatus } from './types';

/** The job's own figures, as `kubectl get telasticjobs` shows them; `unknown` changes none. */
export function mirrorJob(job: ObservedJob): TelasticJobStatus {
  if (job === 'unknown') return {};
  if (job === 'absent') return { state: 'pending' };
  return {
    state: job.state,
    round: job.round,
    worldSize: job.worldSize,
    restarts: job.restarts,
    ...(job.lastFailure ? { lastFailure: describeFailure(job.lastFailure) } : {}),
  };
}

export function specCondition(valid: true | string, now: number, before?: Condition[]): Condition {
  const c: Condition = valid === true
    ? { type: 'SpecValid', status: 'True', reason: 'Valid', message: 'the spec is valid' }
    : { type: 'SpecValid', status: 'False', reason: 'InvalidSpec', message: valid };
  const old = before?.find((b) => b.type === c.type);
  const same = old && old.status === c.status && old.reason === c.reason && old.message === c.message;
  return { ...c, lastTransitionTime: same && old.lastTransitionTime ? old.lastTransitionTime : new Date(now).toISOString() };
}

/** A merge patch of the fields of `want` that differ from the resource's status; none if all agree. */
export function statusPatch(job: TelasticJob, want: TelasticJobStatus): Action[] {
  const have = (job.status ?? {}) as Record<string, unknown>;
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(want)) {
    if (v === undefined) continue;
    if (JSON.stringify(have[k]) !== JSON.stringify(v)) patch[k] = v;
  }
  return Object.keys(patch).length ? [{ kind: 'patchStatus', status: patch as TelasticJobStatus }] : [];
}
