/**
 * The operator's value types: a TelasticJob as the operator reads it, what it observes of the
 * world in one pass, and the actions a pass decides. The decisions (reconcile.ts) are pure
 * functions from an `Observed` to `Action[]`; kube.ts and loop.ts carry the actions out.
 * Only types come from @kubernetes/client-node here, so the pure parts load without it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { JobSpecInput } from '../job/spec';
import type { JobStatus } from '../job/status';

export const GROUP = 'telastic.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'telasticjobs';
export const KIND = 'TelasticJob';
export const API_VERSION = `${GROUP}/${VERSION}`;
/** Held while the job may still run: deletion cancels it and waits for its pods to end. */
export const FINALIZER = 'telastic.dev/job-ended';
/** Pod labels: the job's name (the scale subresource's selector) and the pod's index. */
export const JOB_LABEL = 'telastic.dev/job';
export const INDEX_LABEL = 'telastic.dev/index';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'telastic-operator' };
/** On a pod the operator drains before deleting it (scale down): when the drain was asked. */
export const DRAINING_ANNOTATION = 'telastic.dev/drain-requested-at';

export interface TelasticJobStatus {
  jobId?: string;
  state?: string;
  round?: number;
  worldSize?: number;
  restarts?: number;
  lastFailure?: string;
  message?: string;
  replicas?: number;
  selector?: string;
  nextIndex?: number;
  observedGeneration?: number;
  cancelRequestedAt?: string;
  conditions?: Condition[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface TelasticJob {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    deletionTimestamp?: string | Date;
    finalizers?: string[];
  };
  /** Unparsed: resource.ts parses it (zod), a bad one becomes a condition and an event. */
  spec: unknown;
  status?: TelasticJobStatus;
}

/**
 * What a pass knows about the job's workflow: its status object; `absent`: no workflow with
 * this id (start it); `unknown`: Temporal or the coordinator did not answer (decide nothing
 * that needs to know).
 */
export type ObservedJob = JobStatus | 'absent' | 'unknown';

export interface Observed {
  resource: TelasticJob;
  /** Pods with the job's label in its namespace; reconcile keeps only those the resource owns. */
  pods: V1Pod[];
  job: ObservedJob;
  /** ms since the epoch. */
  now: number;
}

/** How the operator's pods reach Temporal (its own flags, the same for every job). */
export interface PodEnvironment {
  /** The Temporal frontend as pods reach it (`--rdzv-endpoint`). */
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  /** A Secret whose keys become each pod's environment (TLS and API-key variables). */
  envFromSecret?: string;
  serviceAccountName?: string;
}

export type Action =
  | { kind: 'addFinalizer' }
  | { kind: 'removeFinalizer' }
  | { kind: 'startJob'; spec: JobSpecInput }
  | { kind: 'scaleJob'; jobId: string; minNodes: number; maxNodes: number }
  | { kind: 'drainNode'; jobId: string; nodeId: string; graceMs: number }
  | { kind: 'cancelJob'; jobId: string }
  | { kind: 'createPod'; pod: V1Pod }
  | { kind: 'markDraining'; name: string; at: string }
  | { kind: 'deletePod'; name: string; why: string }
  /** A merge patch of `.status` (a field set to null is removed). */
  | { kind: 'patchStatus'; status: { [K in keyof TelasticJobStatus]: TelasticJobStatus[K] | null } }
  | { kind: 'event'; type: 'Normal' | 'Warning'; reason: string; message: string };
