/**
 * The job spec and the messages a job accepts, as zod schemas. Types are inferred from the
 * schemas, so what is validated and what is typed can never drift apart. This module is pure
 * (no Node built-ins) because workflow code imports it.
 */
import { z } from 'zod';
import { DEFAULT_GROUP_SIZE } from './groups';
import { DEFAULT_MAX_RESTARTS_WITHOUT_PROGRESS } from './progress';

const id = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]*$/, 'letters, digits and . _ : @ - only');

/** Job and node ids: also path components on the agents (run and log dirs), so never `.`, `..` or `/`. */
export const idSchema = id;

const ms = z.number().int().positive();

/** What every worker process runs: `$PYTHON_EXEC -u [-m] script args…`, or the script itself. */
export const entrypointSchema = z.object({
  script: z.string().min(1),
  args: z.array(z.string()),
  module: z.boolean().default(false),
  noPython: z.boolean().default(false),
});
export type Entrypoint = z.infer<typeof entrypointSchema>;

/** Rendezvous timing: torchrun's `--rdzv-conf` keys, compiled to milliseconds. */
export const rdzvTimingSchema = z.object({
  joinTimeoutMs: ms.default(600_000),
  lastCallTimeoutMs: z.number().int().nonnegative().default(30_000),
  heartbeatTimeoutMs: ms.default(10_000),
  /** How long a known member may take to pick up `prepare` before it is dropped as lost. */
  prepareTimeoutMs: ms.default(5_000),
  /** Nodes per group workflow (`group_size`): see src/job/groups.ts and DESIGN.md, Scale. */
  groupSize: z.number().int().min(1).max(1000).default(DEFAULT_GROUP_SIZE),
  /**
   * How long the job waits when enough nodes joined but the ones it may not use (quarantined,
   * failing their health check) leave it below minNodes, before it fails (src/job/health.ts).
   * Absent: DEFAULT_UNUSABLE_TIMEOUT_MS (60 s).
   */
  unusableTimeoutMs: ms.optional(),
});
export type RdzvTiming = z.infer<typeof rdzvTimingSchema>;

export const jobSpecSchema = z
  .object({
    jobId: id,
    minNodes: z.number().int().min(1),
    maxNodes: z.number().int().min(1),
    nprocPerNode: z.number().int().min(1),
    maxRestarts: z.number().int().min(0).default(0),
    /**
     * Failure restarts in a row that resume from the same checkpoint before the job ends with a
     * no-progress verdict (src/job/progress.ts); 0: never. Only with a checkpoint directory.
     */
    maxRestartsWithoutProgress: z.number().int().min(0).default(DEFAULT_MAX_RESTARTS_WITHOUT_PROGRESS),
    role: z.string().min(1).default('default'),
    entrypoint: entrypointSchema,
    rdzv: rdzvTimingSchema.default({}),
    shutdownTimeoutMs: z.number().int().nonnegative().default(30_000),
    checkpointDir: z.string().min(1).optional(),
    keepCheckpoints: z.number().int().min(1).optional(),
    /**
     * A node none of whose ranks reported progress (TELASTIC_PROGRESS_FILE) for this long while
     * its workers run is hung: its agent kills them and the job restarts. Absent: never.
     */
    progressTimeoutMs: ms.optional(),
    /**
     * With progressTimeoutMs: the bound before the workers' first report (import, init, loading a
     * checkpoint), like Kubernetes' startupProbe before its livenessProbe. Absent: progressTimeoutMs.
     */
    progressStartTimeoutMs: ms.optional(),
    /**
     * Continue-as-new after this many rounds even before Temporal suggests it (which it does
     * near its history limits); for operators who want short histories, and for tests.
     */
    continueAsNewEveryRounds: z.number().int().min(1).optional(),
    /**
     * The pool the job was submitted to (`telastic submit --pool`): its nodes come from the
     * pool's agents, which run `entrypoint` with `env` if they allow it. Absent for jobs whose
     * nodes join with `telastic run`.
     */
    pool: id.optional(),
    /** Environment variables of every worker, for jobs submitted to a pool (`--env K=V`). */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'), z.string()).optional(),
    /** Set by the starter when the namespace has telastic's custom search attributes. */
    searchAttributes: z.boolean().default(false),
  })
  .superRefine((s, ctx) => {
    if (s.minNodes > s.maxNodes) ctx.addIssue({ code: 'custom', message: `minNodes (${s.minNodes}) must not exceed maxNodes (${s.maxNodes})`, path: ['minNodes'] });
    if (s.progressStartTimeoutMs !== undefined && s.progressTimeoutMs === undefined) {
      ctx.addIssue({ code: 'custom', message: 'progressStartTimeoutMs is the bound before the first report of progressTimeoutMs: set progressTimeoutMs too', path: ['progressStartTimeoutMs'] });
    }
  });
export type JobSpecInput = z.input<typeof jobSpecSchema>;
export type JobSpec = z.infer<typeof jobSpecSchema>;

/** A node offering itself to a job (the `join` update). */
export const joinRequestSchema = z.object({
  nodeId: id,
  /** The address other nodes reach this one at; MASTER_ADDR when it is group rank 0. */
  address: z.string().min(1),
  /** Worker processes this node runs (its nproc-per-node). */
  slots: z.number().int().min(1),
  entrypoint: entrypointSchema,
  role: z.string().min(1).default('default'),
  /**
   * Which run of the node's agent sends it (`telastic run` picks one at start). A join from a
   * member with the same incarnation is the same agent saying it again (a join retried, or sent
   * twice before the first arrived): not a restart. Without one, every join of a member is.
   */
  incarnation: z.string().min(1).max(100).optional(),
});
export type JoinRequest = z.infer<typeof joinRequestSchema>;

export const leaveRequestSchema = z.object({ nodeId: id, reason: z.string().optional() });
export type LeaveRequest = z.infer<typeof leaveRequestSchema>;

/**
 * A drain. `checkpointFirst`: every worker of the job is first asked to checkpoint (the agents'
 * --checkpoint-signal) and the node leaves once a checkpoint newer than the request is complete,
 * or after `graceMs` (src/job/preempt.ts).
 */
export const drainRequestSchema = z.object({
  nodeId: id,
  checkpointFirst: z.boolean().optional(),
  /** How long a checkpoint-first drain waits for the checkpoint. @default 60000 */
  graceMs: ms.max(3_600_000).optional(),
});
export type DrainRequest = z.infer<typeof drainRequestSchema>;

export const scaleRequestSchema = z
  .object({
    minNodes: z.number().int().min(1).optional(),
    maxNodes: z.number().int().min(1).optional(),
  })
  .refine((s) => s.minNodes !== undefined || s.maxNodes !== undefined, {
    message: 'give minNodes or maxNodes',
  });
export type ScaleRequest = z.infer<typeof scaleRequestSchema>;

/** One line naming the first bad field and what is wrong with it. */
export function describeZodError(err: z.ZodError, prefix = ''): string {
  const issue = err.issues[0];
  if (!issue) return `${prefix}invalid input`;
  const field = issue.path.length ? issue.path.join('.') : 'input';
  return `${prefix}${field}: ${issue.message}`;
}

/** Parse with a schema; on failure throw an Error whose message is one line naming the field. */
export function parseOrThrow<T extends z.ZodTypeAny>(schema: T, value: unknown, what: string): z.infer<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(describeZodError(r.error, `invalid ${what}: `));
  return r.data;
}
