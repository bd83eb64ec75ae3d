/** TelasticJobs, pods and job statuses for the operator's pure tests. */
import type { V1Pod } from '@kubernetes/client-node';
import type { JobStatus, NodeStatus } from '../../src/job/status';
import { podFor } from '../../src/operator/pod';
import { telasticJobSpecSchema } from '../../src/operator/resource';
import { DRAINING_ANNOTATION, FINALIZER, type PodEnvironment, type TelasticJob, type TelasticJobStatus } from '../../src/operator/types';

export const ENV: PodEnvironment = { temporalAddress: 'temporal.telastic:7233', temporalNamespace: 'default', taskQueue: 'telastic' };
export const UID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
export const JOB_ID = 'ml.train.0f1e2d3c';
export const NOW = Date.parse('2026-12-02T12:00:00Z');

export const minimalSpec = () => ({ image: 'telastic:dev', command: ['train.py', '--epochs', '3'], nnodes: { min: 1, max: 4 } });

export function job(spec: Record<string, unknown> = {}, status?: TelasticJobStatus, meta: Partial<TelasticJob['metadata']> = {}): TelasticJob {
  return {
    apiVersion: 'telastic.dev/v1alpha1',
    kind: 'TelasticJob',
    metadata: { name: 'train', namespace: 'ml', uid: UID, generation: 1, finalizers: [FINALIZER], ...meta },
    spec: { ...minimalSpec(), ...spec },
    ...(status ? { status } : {}),
  };
}

/** A pod the operator made for `j` at `index`, in `phase`. */
export function pod(j: TelasticJob, index: number, phase: NonNullable<V1Pod['status']>['phase'] = 'Running', o: { deleting?: boolean; drainAt?: number } = {}): V1Pod {
  const p = podFor(j, telasticJobSpecSchema.parse(j.spec), index, ENV);
  return {
    ...p,
    metadata: {
      ...p.metadata,
      ...(o.deleting ? { deletionTimestamp: new Date(NOW - 1000) } : {}),
      ...(o.drainAt !== undefined ? { annotations: { [DRAINING_ANNOTATION]: new Date(o.drainAt).toISOString() } } : {}),
    },
    status: { phase, podIP: `10.244.0.${10 + index}` },
  };
}

export function node(nodeId: string, state: NodeStatus['state'] = 'running', groupRank: number | null = 0): NodeStatus {
  return { nodeId, address: '10.244.0.1', groupRank, state };
}

export function status(o: Partial<JobStatus> = {}): JobStatus {
  return {
    jobId: JOB_ID,
    state: 'running',
    round: 1,
    restarts: 0,
    maxRestarts: 0,
    minNodes: 1,
    maxNodes: 4,
    worldSize: 4,
    nodes: [0, 1, 2, 3].map((i) => node(`train-${i}`, 'running', i)),
    spares: [],
    lastFailure: null,
    checkpoint: null,
    ...o,
  };
}
