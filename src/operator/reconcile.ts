/**
 * The operator's decisions: one pure function from what a pass observed (the resource, its pods,
 * its workflow's status) to the actions that bring the world closer to the spec. It holds no
 * state: whatever it must remember lives in the resource (`.status.nextIndex`,
 * `.status.cancelRequestedAt`) or on a pod (the drain annotation), so a pass that is repeated,
 * or run by another operator after a failover, decides the same. Rules (issue 19):
 *
 * - one pod per node, `.spec.replicas` of them (default nnodes.max); the workflow is started
 *   before the first pod, with maxNodes = replicas, or adopted when it runs;
 * - a pod that ended (failed, or exited after a drain nobody asked the operator for) is deleted
 *   and replaced by a pod with a new name, a newcomer at the next round boundary; a pod being
 *   deleted (a preemption notice: its agent leaves checkpoint-first) is replaced at once;
 * - replicas up: the job's maxNodes goes up first, then the new pods are created;
 * - replicas down: the newest pods are drained checkpoint-first, and deleted once the job has
 *   let them go; the job's maxNodes goes down only then (a lower maxNodes stops the round at
 *   once, before the checkpoint);
 * - the job ended: no pod is created or replaced, the pods stay for their logs;
 * - the resource deleted: the job is cancelled, its pods end with it (deleted if still running
 *   a grace after), then the finalizer goes;
 * - a bad spec: one condition and one event naming the field, nothing else.
 */
import { FINAL_PHASES, type JobPhase } from '../job/state';
import type { JobStatus } from '../job/status';
import { podFor, podName, selectorOf } from './pod';
import { RELEASED, ended, nextIndex, nodeOf, viewPods, type PodView } from './pods';
import { desiredReplicas, jobIdOf, leaveGraceSeconds, parseSpec, toJobSpec, type TelasticJobSpec } from './resource';
import { mirrorJob, specCondition, statusPatch } from './status';
import { FINALIZER, type Action, type Observed, type PodEnvironment } from './types';

/** After a drain's grace, how long more the job may take to let the node go before its pod is deleted anyway. */
export const DRAIN_SLACK_MS = 30_000;
/** How long a deleted resource waits for a cancel Temporal does not confirm (server or coordinator gone). */
export const DELETE_PATIENCE_MS = 300_000;

const isFinal = (state: string | undefined): boolean => FINAL_PHASES.includes(state as JobPhase);

export function reconcile(o: Observed, env: PodEnvironment): Action[] {
  const job = o.resource;
  const pods = viewPods(job, o.pods);
  if (job.metadata.deletionTimestamp) return deletion(o, pods);
  const actions: Action[] = job.metadata.finalizers?.includes(FINALIZER) ? [] : [{ kind: 'addFinalizer' }];
  const parsed = parseSpec(job);
  if (!parsed.ok) {
    if (job.status?.state === 'invalid' && job.status.message === parsed.message) return actions;
    return [
      ...actions,
      ...statusPatch(job, { state: 'invalid', message: parsed.message, conditions: [specCondition(parsed.message, o.now, job.status?.conditions)], observedGeneration: job.metadata.generation }),
      { kind: 'event', type: 'Warning', reason: 'InvalidSpec', message: parsed.message },
    ];
  }
  const spec = parsed.spec;
  const status = typeof o.job === 'object' ? o.job : null;
  const final = isFinal(status?.state) || isFinal(job.status?.state);
  if (o.job === 'absent' && !final) actions.push({ kind: 'startJob', spec: toJobSpec(job, spec) });

  const live = pods.filter((p) => !p.deleting && !ended(p));
  const want = {
    jobId: jobIdOf(job),
    ...mirrorJob(final && o.job === 'absent' ? 'unknown' : o.job),
    message: o.job === 'unknown' ? 'the job did not answer (Temporal down, or no controller): its figures may be stale' : '',
    replicas: live.length,
    selector: selectorOf(job),
    observedGeneration: job.metadata.generation,
    conditions: [specCondition(true, o.now, job.status?.conditions)],
  };
  if (final) return [...actions, ...statusPatch(job, want)];

  const changes = podActions(o, spec, pods, live, status, env);
  // `.status.replicas` as the pass leaves them: live pods, less those it deletes, plus those it creates.
  const deleted = new Set(changes.filter((a) => a.kind === 'deletePod').map((a) => (a as { name: string }).name));
  const replicas = live.filter((p) => !deleted.has(p.name)).length + changes.filter((a) => a.kind === 'createPod').length;
  return [...actions, ...changes, ...statusPatch(job, { ...want, replicas })];
}

function podActions(o: Observed, spec: TelasticJobSpec, pods: PodView[], live: PodView[], status: JobStatus | null, env: PodEnvironment) {
  const job = o.resource;
  const jobId = jobIdOf(job);
  const desired = desiredReplicas(spec);
  const graceMs = Math.max(1000, leaveGraceSeconds(spec) * 1000);
  const actions: Action[] = [];

  for (const p of pods.filter((q) => !q.deleting && ended(q))) {
    actions.push({ kind: 'deletePod', name: p.name, why: `its agent ended (${p.phase})` });
    if (p.phase === 'Failed') actions.push({ kind: 'event', type: 'Warning', reason: 'PodFailed', message: `pod ${p.name} failed; a new pod takes its place at the next round boundary` });
  }

  // Drains the operator asked for: the pod goes once the job let its node go.
  let unreleased = 0;
  for (const p of live.filter((q) => q.drainAt !== null)) {
    const node = status && nodeOf(status, p);
    const released = status !== null && (!node || RELEASED.includes(node.state));
    if (released || o.now > p.drainAt! + graceMs + DRAIN_SLACK_MS) actions.push({ kind: 'deletePod', name: p.name, why: released ? 'drained' : 'its drain took too long' });
    else unreleased++;
  }

  // Replicas down: the newest pods beyond the wanted count are drained (a pod that never joined is just deleted).
  const active = live.filter((p) => p.drainAt === null);
  const excess = active.slice(Math.min(active.length, desired));
  for (const p of excess) {
    const joined = status === null || nodeOf(status, p) !== undefined;
    if (p.phase === 'Pending' && !joined) {
      actions.push({ kind: 'deletePod', name: p.name, why: 'scaled down before it joined' });
      continue;
    }
    actions.push({ kind: 'markDraining', name: p.name, at: new Date(o.now).toISOString() }, { kind: 'drainNode', jobId, nodeId: p.name, graceMs });
    unreleased++;
  }

  // The job's min/max: up before new pods join, down only once no drain waits for its checkpoint.
  if (status && (status.minNodes !== spec.nnodes.min || status.maxNodes !== desired) && (desired >= status.maxNodes || unreleased === 0)) {
    actions.push({ kind: 'scaleJob', jobId, minNodes: spec.nnodes.min, maxNodes: desired });
  }

  // Replicas up, or a pod to replace: new pods with new names, the counter saved first.
  const missing = desired - active.length;
  if (missing <= 0) return actions;
  const first = nextIndex(job, pods, status);
  const next = first + missing;
  actions.push({ kind: 'patchStatus', status: { nextIndex: next } });
  for (let i = first; i < next; i++) actions.push({ kind: 'createPod', pod: podFor(job, spec, i, env) });
  if (first > 0) actions.push({ kind: 'event', type: 'Normal', reason: 'PodsCreated', message: `created ${Array.from({ length: missing }, (_, i) => podName(job, first + i)).join(', ')}` });
  return actions;
}

/** The resource is being deleted: cancel the job, let its pods end, then let the resource go. */
function deletion(o: Observed, pods: PodView[]): Action[] {
  const job = o.resource;
  if (!job.metadata.finalizers?.includes(FINALIZER)) return [];
  const jobId = jobIdOf(job);
  const jobEnded = o.job === 'absent' || (typeof o.job === 'object' && isFinal(o.job.state));
  const cancelAt = job.status?.cancelRequestedAt ? Date.parse(job.status.cancelRequestedAt) : null;
  // The time is saved first: a cancel Temporal refuses (down) is sent again each pass, up to the patience.
  if (!jobEnded && cancelAt === null) return [{ kind: 'patchStatus', status: { cancelRequestedAt: new Date(o.now).toISOString() } }, { kind: 'cancelJob', jobId }];
  const gaveUp = !jobEnded && o.now - cancelAt! > DELETE_PATIENCE_MS;
  if (!jobEnded && !gaveUp) return [{ kind: 'cancelJob', jobId }];
  const parsed = parseSpec(job);
  const graceMs = ((parsed.ok ? parsed.spec.terminationGracePeriodSeconds : 30) + 5) * 1000;
  // The pods' agents exit as the job ends; one still running a grace after the cancel is deleted.
  const late = cancelAt === null || gaveUp || o.now - cancelAt > graceMs;
  const actions: Action[] = pods
    .filter((p) => !p.deleting && (ended(p) || late))
    .map((p) => ({ kind: 'deletePod', name: p.name, why: 'the TelasticJob was deleted' }));
  if (gaveUp && !job.status?.message?.startsWith('gave up')) {
    const message = `gave up waiting for job ${jobId} to confirm its cancel after ${DELETE_PATIENCE_MS / 1000}s; its pods are deleted`;
    actions.push({ kind: 'event', type: 'Warning', reason: 'CancelUnconfirmed', message }, { kind: 'patchStatus', status: { message } });
  }
  if (pods.length === 0) actions.push({ kind: 'removeFinalizer' });
  return actions;
}
