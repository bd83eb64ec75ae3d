/**
 * One pod per node. Each runs `telastic run` (the image's entrypoint is telastic, as in the
 * project's Dockerfile) with the node id = the pod's name and the advertised address = the pod's
 * IP, both from the downward API, and `--no-coordinator`: job workflows are hosted by the
 * operator (or a `telastic controller`), never on a training node that may be preempted.
 * restartPolicy Never: a pod whose agent ended is replaced by a new pod with a new name, which
 * joins at the next round boundary as a newcomer (a restarted container under the same node id
 * would be taken for the same node coming back).
 */
import type { V1Container, V1EnvVar, V1Pod, V1Volume } from '@kubernetes/client-node';
import { CHECKPOINT_VOLUME, jobIdOf, leaveGraceSeconds, rdzvConfArg, type TelasticJobSpec } from './resource';
import { API_VERSION, INDEX_LABEL, JOB_LABEL, KIND, MANAGED_BY, type PodEnvironment, type TelasticJob } from './types';

export const CONTAINER = 'telastic';

export function podName(job: TelasticJob, index: number): string {
  return `${job.metadata.name}-${index}`;
}

/** The label selector of a job's pods (`.status.selector`, for the scale subresource and HPAs). */
export function selectorOf(job: TelasticJob): string {
  return `${JOB_LABEL}=${job.metadata.name}`;
}

/** `telastic run`'s argv in the pod: the job's flags, then the script and its arguments. */
export function runArgs(job: TelasticJob, spec: TelasticJobSpec, env: PodEnvironment): string[] {
  const conf = rdzvConfArg(spec);
  return [
    'run',
    '--no-coordinator',
    '--rdzv-backend', 'temporal',
    '--rdzv-endpoint', env.temporalAddress,
    '--namespace', env.temporalNamespace,
    '--task-queue', env.taskQueue,
    '--rdzv-id', jobIdOf(job),
    '--nnodes', `${spec.nnodes.min}:${spec.nnodes.max}`,
    '--nproc-per-node', String(spec.nprocPerNode),
    '--max-restarts', String(spec.maxRestarts),
    // Expanded by the kubelet from the container's environment (the downward API below).
    '--node-id', '$(TELASTIC_POD_NAME)',
    '--local-addr', '$(TELASTIC_POD_IP)',
    '--leave-grace', `${leaveGraceSeconds(spec)}s`,
    ...(conf ? ['--rdzv-conf', conf] : []),
    ...(spec.checkpoint ? ['--checkpoint-dir', spec.checkpoint.mountPath] : []),
    ...(spec.checkpoint?.keep ? ['--keep-checkpoints', String(spec.checkpoint.keep)] : []),
    ...(spec.module ? ['-m'] : []),
    ...(spec.noPython ? ['--no-python'] : []),
    ...(spec.virtualLocalRank ? ['--virtual-local-rank'] : []),
    ...spec.command,
  ];
}

export function podFor(job: TelasticJob, spec: TelasticJobSpec, index: number, env: PodEnvironment): V1Pod {
  const name = podName(job, index);
  const downward: V1EnvVar[] = [
    { name: 'TELASTIC_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'TELASTIC_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  ];
  const container: V1Container = {
    name: CONTAINER,
    image: spec.image,
    ...(spec.imagePullPolicy ? { imagePullPolicy: spec.imagePullPolicy } : {}),
    args: runArgs(job, spec, env),
    env: [...downward, ...((spec.env ?? []) as V1EnvVar[])],
    ...(env.envFromSecret ? { envFrom: [{ secretRef: { name: env.envFromSecret } }] } : {}),
    ...(spec.resources ? { resources: spec.resources as V1Container['resources'] } : {}),
  };
  const mounts = [...(spec.checkpoint ? [{ name: CHECKPOINT_VOLUME, mountPath: spec.checkpoint.mountPath }] : []), ...(spec.volumeMounts ?? [])];
  if (mounts.length) container.volumeMounts = mounts;
  const volumes: V1Volume[] = [
    ...(spec.checkpoint ? [{ ...(spec.checkpoint.volume as Omit<V1Volume, 'name'>), name: CHECKPOINT_VOLUME }] : []),
    ...((spec.volumes ?? []) as V1Volume[]),
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: job.metadata.namespace,
      labels: { [JOB_LABEL]: job.metadata.name, [INDEX_LABEL]: String(index), ...MANAGED_BY },
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: job.metadata.name, uid: job.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds,
      ...(env.serviceAccountName ? { serviceAccountName: env.serviceAccountName } : { automountServiceAccountToken: false }),
      ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
      ...(spec.tolerations ? { tolerations: spec.tolerations } : {}),
      containers: [container],
      ...(volumes.length ? { volumes } : {}),
    },
  };
}
