/** What reconcile needs to know of a pod: its index, phase, and whether it is going or drained. */
import type { V1Pod } from '@kubernetes/client-node';
import type { JobStatus } from '../job/status';
import { DRAINING_ANNOTATION, INDEX_LABEL, type TelasticJob } from './types';

export interface PodView {
  name: string;
  index: number;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  /** A deletion timestamp is set: its agent got SIGTERM (a preemption notice) and is leaving. */
  deleting: boolean;
  /** When the operator asked the job to drain it (scale down), ms since the epoch. */
  drainAt: number | null;
}

/** The pods the resource owns (by uid: not a namesake's of an earlier incarnation), oldest first. */
export function viewPods(job: TelasticJob, pods: readonly V1Pod[]): PodView[] {
  return pods
    .filter((p) => p.metadata?.ownerReferences?.some((r) => r.uid === job.metadata.uid))
    .map((p): PodView => {
      const drain = p.metadata?.annotations?.[DRAINING_ANNOTATION];
      const at = drain === undefined ? NaN : Date.parse(drain);
      return {
        name: p.metadata?.name ?? '',
        index: Number(p.metadata?.labels?.[INDEX_LABEL] ?? -1),
        phase: (p.status?.phase ?? 'Pending') as PodView['phase'],
        deleting: Boolean(p.metadata?.deletionTimestamp),
        drainAt: Number.isNaN(at) ? null : at,
      };
    })
    .sort((a, b) => a.index - b.index);
}

export const ended = (p: PodView): boolean => p.phase === 'Succeeded' || p.phase === 'Failed';

/** The pod's node in the job (its node id is the pod's name), or undefined if the job never saw it. */
export function nodeOf(job: JobStatus, pod: PodView): JobStatus['nodes'][number] | undefined {
  return job.nodes.find((n) => n.nodeId === pod.name);
}

/** Node states in which a drained node has been let go by the job (it leaves at the round boundary). */
export const RELEASED = ['draining', 'drained', 'left', 'lost'];

/** The next pod index: never one a pod or a node of the job has had (a node id is never reused). */
export function nextIndex(job: TelasticJob, pods: readonly PodView[], status: JobStatus | null): number {
  const prefix = `${job.metadata.name}-`;
  const fromNodes = (status?.nodes ?? [])
    .map((n) => (n.nodeId.startsWith(prefix) ? Number(n.nodeId.slice(prefix.length)) : NaN))
    .filter((n) => Number.isInteger(n) && n >= 0);
  return Math.max(job.status?.nextIndex ?? 0, ...pods.map((p) => p.index + 1), ...fromNodes.map((n) => n + 1));
}
