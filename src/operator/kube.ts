/**
 * The operator's Kubernetes I/O through @kubernetes/client-node: lists and watches of
 * TelasticJobs and their pods, the writes a reconcile pass decided, events, and the Lease.
 * Every write is idempotent as reconcile needs it: creating a pod that exists, deleting one that
 * is gone, are no-ops; finalizer and lease writes carry a resourceVersion (a conflict is retried
 * by the next pass, on fresh data).
 */
import * as k8s from '@kubernetes/client-node';
import { leaseStep, releasedSpec, type LeaseSpecView, type LeaseTiming } from './lease';
import { API_VERSION, DRAINING_ANNOTATION, FINALIZER, GROUP, JOB_LABEL, KIND, MANAGED_BY, PLURAL, VERSION, type TelasticJob } from './types';

const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const managedBy = Object.entries(MANAGED_BY).map(([k, v]) => `${k}=${v}`).join(',');

/** The HTTP status of a failed API call (409 conflict, 404 not found…), else undefined. */
export function statusOf(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

export class Kube {
  readonly core: k8s.CoreV1Api;
  readonly custom: k8s.CustomObjectsApi;
  readonly coordination: k8s.CoordinationV1Api;

  /** `namespace`: watch one namespace's jobs; undefined: every namespace. */
  constructor(readonly kc: k8s.KubeConfig, readonly namespace?: string) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  }

  async listJobs(): Promise<TelasticJob[]> {
    const list = (this.namespace
      ? await this.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL })
      : await this.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as { items: TelasticJob[] };
    return list.items;
  }

  async listPods(job: TelasticJob): Promise<k8s.V1Pod[]> {
    const r = await this.core.listNamespacedPod({ namespace: job.metadata.namespace, labelSelector: `${JOB_LABEL}=${job.metadata.name}` });
    return r.items;
  }

  async createPod(pod: k8s.V1Pod): Promise<void> {
    await ignore([409], this.core.createNamespacedPod({ namespace: pod.metadata!.namespace!, body: pod }));
  }

  async deletePod(namespace: string, name: string): Promise<void> {
    await ignore([404], this.core.deleteNamespacedPod({ name, namespace }));
  }

  async markDraining(namespace: string, name: string, at: string): Promise<void> {
    await this.core.patchNamespacedPod({ name, namespace, body: { metadata: { annotations: { [DRAINING_ANNOTATION]: at } } } }, MERGE);
  }

  async patchStatus(job: TelasticJob, status: Record<string, unknown>): Promise<void> {
    const { namespace, name } = job.metadata;
    await this.custom.patchNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } }, MERGE);
  }

  /** Add or remove the finalizer; the resourceVersion makes a concurrent change a conflict. */
  async setFinalizer(job: TelasticJob & { metadata: { resourceVersion?: string } }, present: boolean): Promise<void> {
    const others = (job.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    const finalizers = present ? [...others, FINALIZER] : others;
    const { namespace, name, resourceVersion } = job.metadata;
    await ignore([404], this.custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { metadata: { finalizers, resourceVersion } } }, MERGE));
  }

  async event(job: TelasticJob, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    const { namespace, name, uid } = job.metadata;
    await this.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${name}.`, namespace },
        involvedObject: { apiVersion: API_VERSION, kind: KIND, name, namespace, uid },
        type,
        reason,
        message,
        source: { component: 'telastic-operator' },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
  }

  /**
   * Watch the jobs and the operator's pods; `onChange` on every event (the loop coalesces them).
   * A watch that ends is started again after a second. Returns a stop function.
   */
  watch(onChange: () => void, onError: (line: string) => void): () => void {
    const w = new k8s.Watch(this.kc);
    const ns = this.namespace;
    const paths: Array<[string, Record<string, string>]> = [
      [ns ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${GROUP}/${VERSION}/${PLURAL}`, {}],
      [ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods', { labelSelector: managedBy }],
    ];
    let stopped = false;
    const aborts: AbortController[] = [];
    const failures = new Map<string, number>();
    const start = (path: string, query: Record<string, string>): void => {
      if (stopped) return;
      const again = (err: unknown) => {
        if (stopped) return;
        // One line per outage, then a capped backoff (1 s doubling to 30 s); a watch the server ended is started again at once.
        const n = err ? (failures.get(path) ?? 0) + 1 : 0;
        failures.set(path, n);
        if (n === 1) onError(`watch ${path}: ${(err as Error).message ?? String(err)}; watching again with a backoff (up to 30s), said once`);
        setTimeout(() => start(path, query), n === 0 ? 0 : Math.min(30_000, 1000 * 2 ** (n - 1))).unref();
      };
      const onEvent = () => {
        failures.set(path, 0);
        onChange();
      };
      w.watch(path, query, onEvent, again).then((a) => aborts.push(a), again);
    };
    for (const [path, query] of paths) start(path, query);
    return () => {
      stopped = true;
      for (const a of aborts) a.abort();
    };
  }

  /**
   * One round of leader election: read the lease, decide (lease.ts), write. True when this
   * candidate holds the lease after the call.
   */
  async electOnce(namespace: string, name: string, me: string, now: number, timing: LeaseTiming): Promise<boolean> {
    let lease: k8s.V1Lease | null = null;
    try {
      lease = await this.coordination.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    const step = leaseStep(lease?.spec ? (lease.spec as LeaseSpecView) : lease ? {} : null, me, now, timing);
    if (step.do === 'follow') return false;
    const spec = step.spec as k8s.V1LeaseSpec;
    try {
      if (step.do === 'create') await this.coordination.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec } });
      else await this.coordination.replaceNamespacedLease({ name, namespace, body: { metadata: { name, namespace, resourceVersion: lease!.metadata!.resourceVersion }, spec } });
      return true;
    } catch (err) {
      if (statusOf(err) === 409) return false; // another candidate wrote first
      throw err;
    }
  }

  /** Give the lease up if this candidate holds it (a clean shutdown). */
  async release(namespace: string, name: string, me: string, now: number): Promise<void> {
    const lease = await this.coordination.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== me) return;
    const spec = releasedSpec(lease.spec as LeaseSpecView, now) as k8s.V1LeaseSpec;
    await this.coordination.replaceNamespacedLease({ name, namespace, body: { metadata: { name, namespace, resourceVersion: lease.metadata!.resourceVersion }, spec } });
  }
}

async function ignore(codes: number[], p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!codes.includes(statusOf(err) ?? -1)) throw err;
  }
}
