/**
 * A TelasticJob's spec as zod parses it: the same rules as the CRD's OpenAPI schema and CEL rules
 * (deploy/crd/telasticjobs.telastic.dev.yaml; test/operator/crd.test.ts holds them to each other),
 * and its translation to the job spec (src/job/spec.ts) the workflow starts with. The API server
 * rejects most bad specs before the operator sees them; this is the operator's own check (a CRD
 * installed without its schema, an older version), and what a bad spec's condition and event say.
 */
import { z } from 'zod';
import { describeZodError, type JobSpecInput, type RdzvTiming } from '../job/spec';
import type { TelasticJob } from './types';

/** Kubernetes' resource.Quantity, as its own CRDs spell the pattern. */
export const QUANTITY = /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
const quantity = z.union([z.number().int(), z.string().regex(QUANTITY, 'not a Kubernetes quantity')]);
const int = z.number().int();
const seconds = z.number().positive();
/** A volume's name: a DNS label, as the API server checks it in a pod. */
const volumeName = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a DNS label: lower-case letters, digits and -').max(63);
/** The name the checkpoint volume takes in a pod; `volumes` may not use it. */
export const CHECKPOINT_VOLUME = 'telastic-checkpoints';

/** The longest name: pods are NAME-INDEX (63 characters as a host name) and NAME is a label value. */
export const MAX_NAME = 52;

export const rdzvConfSchema = z.object({
  join_timeout: seconds.optional(),
  last_call_timeout: z.number().nonnegative().optional(),
  heartbeat_timeout: seconds.optional(),
  prepare_timeout: seconds.optional(),
  unusable_timeout: seconds.optional(),
  group_size: int.min(1).max(1000).optional(),
});

export const telasticJobSpecSchema = z
  .object({
    image: z.string().min(1),
    imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
    command: z
      .array(z.string().max(4096))
      .min(1)
      .max(1000)
      .refine((c) => c.length === 0 || (c[0].length > 0 && !c[0].startsWith('-')), 'the first item is the script (or module with module: true): not empty, not a flag'),
    module: z.boolean().optional(),
    noPython: z.boolean().optional(),
    /** `--virtual-local-rank`: LOCAL_RANK 0 in every worker, CUDA_VISIBLE_DEVICES narrowed to its device. */
    virtualLocalRank: z.boolean().optional(),
    nnodes: z
      .object({ min: int.min(1), max: int.min(1) })
      .refine((n) => n.min <= n.max, { message: 'must not exceed nnodes.max', path: ['min'] }),
    replicas: int.min(1).optional(),
    nprocPerNode: int.min(1).default(1),
    maxRestarts: int.min(0).default(0),
    rdzvConf: rdzvConfSchema.optional(),
    checkpoint: z
      .object({
        volume: z.record(z.unknown()),
        mountPath: z.string().max(4096).regex(/^\//, 'an absolute path').default('/checkpoints'),
        keep: int.min(1).optional(),
      })
      .optional(),
    env: z
      .array(z.object({ name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'), value: z.string().optional(), valueFrom: z.record(z.unknown()).optional() }))
      .max(1000)
      .refine((e) => new Set(e.map((v) => v.name)).size === e.length, 'a variable is named twice')
      .optional(),
    volumes: z
      .array(z.object({ name: volumeName }).passthrough())
      .max(100)
      .refine((v) => new Set(v.map((x) => x.name)).size === v.length, 'a volume is named twice')
      .refine((v) => v.every((x) => x.name !== CHECKPOINT_VOLUME), `${CHECKPOINT_VOLUME} is the checkpoint volume's name`)
      .optional(),
    volumeMounts: z
      .array(z.object({ name: volumeName, mountPath: z.string().max(4096).regex(/^\//, 'an absolute path'), readOnly: z.boolean().optional(), subPath: z.string().optional() }))
      .max(100)
      .optional(),
    resources: z.object({ limits: z.record(quantity).optional(), requests: z.record(quantity).optional() }).optional(),
    nodeSelector: z.record(z.string()).optional(),
    tolerations: z
      .array(
        z.object({
          key: z.string().optional(),
          operator: z.enum(['Exists', 'Equal']).optional(),
          value: z.string().optional(),
          effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
          tolerationSeconds: int.optional(),
        }),
      )
      .optional(),
    terminationGracePeriodSeconds: int.min(0).default(30),
  })
  .superRefine((s, ctx) => {
    if (s.replicas !== undefined && (s.replicas < s.nnodes.min || s.replicas > s.nnodes.max)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be between nnodes.min and nnodes.max', path: ['replicas'] });
    }
    if (!(s.volumeMounts ?? []).every((m) => (s.volumes ?? []).some((v) => v.name === m.name))) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'each mount names one of volumes', path: ['volumeMounts'] });
    }
    // Two mounts at one path: the API server would refuse every pod, and the operator retry.
    if (s.checkpoint && (s.volumeMounts ?? []).some((m) => m.mountPath === s.checkpoint!.mountPath)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: "checkpoint.mountPath is the checkpoint volume's", path: ['volumeMounts'] });
    }
  });
export type TelasticJobSpec = z.infer<typeof telasticJobSpecSchema>;

/** A parsed spec, or the one line that names the bad field (`spec.nnodes.min: …`). */
export function parseSpec(job: TelasticJob): { ok: true; spec: TelasticJobSpec } | { ok: false; message: string } {
  if (job.metadata.name.length > MAX_NAME) return { ok: false, message: `metadata.name: at most ${MAX_NAME} characters (pod names are NAME-INDEX and NAME is a label value)` };
  const r = telasticJobSpecSchema.safeParse(job.spec);
  return r.success ? { ok: true, spec: r.data } : { ok: false, message: describeZodError(r.error, 'spec.') };
}

/**
 * The telastic job id (the workflow id): namespace, name and the start of the resource's uid, so
 * that a job deleted and created again under the same name is a new job, not the old one's
 * closed workflow adopted.
 */
export function jobIdOf(job: TelasticJob): string {
  return `${job.metadata.namespace}.${job.metadata.name}.${job.metadata.uid.slice(0, 8)}`;
}

/** The pods (nodes) the job wants: `.spec.replicas`, else nnodes.max. */
export function desiredReplicas(spec: TelasticJobSpec): number {
  return spec.replicas ?? spec.nnodes.max;
}

/** `rdzvConf` as `--rdzv-conf` takes it (torchrun's keys, seconds). */
export function rdzvConfArg(spec: TelasticJobSpec): string {
  return Object.entries(spec.rdzvConf ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** How long a pod's agent waits for a checkpoint on SIGTERM: its grace less 5 s to stop the workers. */
export function leaveGraceSeconds(spec: TelasticJobSpec): number {
  return Math.max(0, spec.terminationGracePeriodSeconds - 5);
}

/** `rdzvConf` in milliseconds, as `telastic run` compiles `--rdzv-conf` (src/config/values.ts secondsToMs); absent keys take the job spec's defaults. */
export function rdzvTiming(spec: TelasticJobSpec): Partial<RdzvTiming> {
  const c = spec.rdzvConf ?? {};
  const ms = (s: number | undefined, positive = true) => (s === undefined ? undefined : positive ? Math.max(1, Math.round(s * 1000)) : Math.round(s * 1000));
  const out: Partial<RdzvTiming> = {
    joinTimeoutMs: ms(c.join_timeout),
    lastCallTimeoutMs: ms(c.last_call_timeout, false),
    heartbeatTimeoutMs: ms(c.heartbeat_timeout),
    prepareTimeoutMs: ms(c.prepare_timeout),
    unusableTimeoutMs: ms(c.unusable_timeout),
    groupSize: c.group_size,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

/**
 * The job spec the workflow starts with: minNodes from nnodes.min, maxNodes = the pods wanted (a
 * scale of `.spec.replicas` moves it), the rendezvous timing as the pods' own `--rdzv-conf`
 * compiles (test/operator/pod.test.ts holds the two together).
 */
export function toJobSpec(job: TelasticJob, spec: TelasticJobSpec): JobSpecInput {
  return {
    jobId: jobIdOf(job),
    minNodes: spec.nnodes.min,
    maxNodes: desiredReplicas(spec),
    nprocPerNode: spec.nprocPerNode,
    maxRestarts: spec.maxRestarts,
    entrypoint: { script: spec.command[0], args: spec.command.slice(1), module: spec.module ?? false, noPython: spec.noPython ?? false },
    rdzv: rdzvTiming(spec),
    ...(spec.checkpoint ? { checkpointDir: spec.checkpoint.mountPath, ...(spec.checkpoint.keep ? { keepCheckpoints: spec.checkpoint.keep } : {}) } : {}),
  };
}
