/**
 * The operator's one loop: while this replica holds the Lease, every pass lists the
 * TelasticJobs and, for each, its pods and its workflow's status, asks `reconcile` what to do
 * and does it, in order, stopping that job's actions at the first that fails (the next pass
 * decides again on fresh data). A watch event wakes the loop at once; otherwise it passes every
 * `resyncMs`, which is also how the workflow's figures reach `.status` (Temporal is polled, not
 * watched).
 */
import { WorkflowNotFoundError, type Connection } from '@temporalio/client';
import { cancelJob, drainNode, getJobStatus, scaleJob, startJob, UPDATE_WAIT_MS, type ClientOptions } from '../client/api';
import type { Logger } from '../log';
import { abortableSleep } from '../temporal/retry';
import type { Kube } from './kube';
import { stillLeader, type LeaseTiming } from './lease';
import { reconcile } from './reconcile';
import { jobIdOf } from './resource';
import type { Action, ObservedJob, PodEnvironment, TelasticJob } from './types';

export interface OperatorOptions {
  kube: Kube;
  temporal: ClientOptions & { connection: Connection };
  pods: PodEnvironment;
  /** This replica's name in the Lease. */
  identity: string;
  lease: { namespace: string; name: string; timing: LeaseTiming };
  /** @default 5000 */
  resyncMs: number;
  log: Logger;
  signal: AbortSignal;
}

/** How long one status query may take before the job counts as `unknown` for this pass. */
const OBSERVE_DEADLINE_MS = 5000;
/** Jobs reconciled at once in a pass. */
const PARALLEL_JOBS = 8;

export async function runOperator(o: OperatorOptions): Promise<void> {
  let lastRenew: number | null = null;
  const leading = () => stillLeader(lastRenew, Date.now(), o.lease.timing);
  let wake: (() => void) | null = null;
  let pending = false;
  const poke = () => {
    pending = true;
    wake?.();
  };

  const election = (async () => {
    let was = false;
    let failing = false;
    while (!o.signal.aborted) {
      try {
        if (await o.kube.electOnce(o.lease.namespace, o.lease.name, o.identity, Date.now(), o.lease.timing)) lastRenew = Date.now();
        if (failing) o.log.info('lease: the API server answers again');
        failing = false;
      } catch (err) {
        // Said once per outage: the API server may be restarting.
        if (!failing) o.log.warn(`lease ${o.lease.namespace}/${o.lease.name}: could not read or renew (${String(err).split('\n')[0]}); trying every ${o.lease.timing.retryPeriodMs / 1000}s`);
        failing = true;
      }
      if (leading() !== was) {
        was = !was;
        o.log.info(was ? `leading (lease ${o.lease.namespace}/${o.lease.name})` : 'no longer leading: another replica holds the lease');
        if (was) poke();
      }
      await abortableSleep(o.lease.timing.retryPeriodMs, o.signal);
    }
  })();

  const stopWatch = o.kube.watch(poke, (line) => o.log.warn(line));
  try {
    while (!o.signal.aborted) {
      pending = false;
      if (leading()) await pass(o, leading);
      if (pending || o.signal.aborted) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          o.signal.removeEventListener('abort', done);
          wake = null;
          resolve();
        };
        const t = setTimeout(done, o.resyncMs);
        wake = done;
        o.signal.addEventListener('abort', done);
      });
    }
  } finally {
    stopWatch();
    await election;
    if (lastRenew !== null) await o.kube.release(o.lease.namespace, o.lease.name, o.identity, Date.now()).catch(() => undefined);
  }
}

async function pass(o: OperatorOptions, leading: () => boolean): Promise<void> {
  let jobs: TelasticJob[];
  try {
    jobs = await o.kube.listJobs();
  } catch (err) {
    o.log.warn({ err: String(err) }, 'could not list TelasticJobs');
    return;
  }
  // A few jobs at a time: one whose coordinator does not answer costs its pass OBSERVE_DEADLINE_MS, not everyone's.
  for (let i = 0; i < jobs.length; i += PARALLEL_JOBS) {
    if (!leading() || o.signal.aborted) return;
    await Promise.all(jobs.slice(i, i + PARALLEL_JOBS).map((job) => reconcileJob(o, job)));
  }
}

async function reconcileJob(o: OperatorOptions, job: TelasticJob): Promise<void> {
  const name = `${job.metadata.namespace}/${job.metadata.name}`;
  try {
    const [pods, observed] = await Promise.all([o.kube.listPods(job), observeJob(o.temporal, jobIdOf(job))]);
    for (const action of reconcile({ resource: job, pods, job: observed, now: Date.now() }, o.pods)) {
      if (action.kind !== 'patchStatus') o.log.info({ job: name }, `${name}: ${describe(action)}`);
      await apply(o, job, action);
    }
  } catch (err) {
    o.log.warn({ job: name }, `${name}: ${(err as Error).message?.split('\n')[0] ?? String(err)} (the next pass tries again)`);
  }
}

export async function observeJob(c: OperatorOptions['temporal'], jobId: string): Promise<ObservedJob> {
  try {
    return await c.connection.withDeadline(Date.now() + OBSERVE_DEADLINE_MS, () => getJobStatus(c, jobId));
  } catch (err) {
    return err instanceof WorkflowNotFoundError ? 'absent' : 'unknown';
  }
}

async function apply(o: OperatorOptions, job: TelasticJob, a: Action): Promise<void> {
  const ns = job.metadata.namespace;
  switch (a.kind) {
    case 'addFinalizer':
      return o.kube.setFinalizer(job, true);
    case 'removeFinalizer':
      return o.kube.setFinalizer(job, false);
    case 'startJob':
      await startJob(o.temporal, a.spec);
      return;
    case 'scaleJob':
      await scaleJob(o.temporal, a.jobId, { minNodes: a.minNodes, maxNodes: a.maxNodes });
      return;
    case 'drainNode':
      await drainNode(o.temporal, a.jobId, a.nodeId, UPDATE_WAIT_MS, { checkpointFirst: true, graceMs: a.graceMs });
      return;
    case 'cancelJob':
      // A job already closed (or gone) is what the cancel wanted.
      await cancelJob(o.temporal, a.jobId).catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
      return;
    case 'createPod':
      return o.kube.createPod(a.pod);
    case 'markDraining':
      return o.kube.markDraining(ns, a.name, a.at);
    case 'deletePod':
      return o.kube.deletePod(ns, a.name);
    case 'patchStatus':
      return o.kube.patchStatus(job, a.status);
    case 'event':
      return o.kube.event(job, a.type, a.reason, a.message);
  }
}

/** One line per action, for the operator's log. */
export function describe(a: Action): string {
  switch (a.kind) {
    case 'startJob':
      return `start job ${a.spec.jobId} (${a.spec.minNodes}:${a.spec.maxNodes} nodes)`;
    case 'scaleJob':
      return `scale job ${a.jobId} to ${a.minNodes}:${a.maxNodes}`;
    case 'drainNode':
      return `drain ${a.nodeId} checkpoint-first (grace ${a.graceMs / 1000}s)`;
    case 'cancelJob':
      return `cancel job ${a.jobId}`;
    case 'createPod':
      return `create pod ${a.pod.metadata?.name}`;
    case 'deletePod':
      return `delete pod ${a.name}: ${a.why}`;
    case 'markDraining':
      return `mark pod ${a.name} draining`;
    case 'event':
      return `event ${a.reason}: ${a.message}`;
    default:
      return a.kind;
  }
}
