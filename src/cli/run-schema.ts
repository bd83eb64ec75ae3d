/**
 * `RunOptions`: what `telastic run` compiled from argv and the environment, validated once more
 * as a whole. Durations are milliseconds (`…Ms`); every field is filled in, defaults included.
 */
import { z } from 'zod';
import type { MetricsOptions } from '../metrics/endpoint';
import { entrypointSchema, jobSpecSchema, joinRequestSchema, rdzvTimingSchema } from '../job/spec';
import { connectionOptionsSchema } from './connection-options';
import { EVENT_LOG_HANDLERS, NUMA_MODES } from '../config/values';

/** The job id rules of the job spec (the workflow id), reused for `--rdzv-id`. */
export const rdzvIdSchema = jobSpecSchema.innerType().shape.jobId;
/** The node id rules of a join request, reused for `--node-id`. */
export const nodeIdSchema = joinRequestSchema.shape.nodeId;

const int = z.number().int();

export const runOptionsSchema = z
  .object({
    /** `--nnodes MIN:MAX` (N means N:N). @default 1 */
    minNodes: int.min(1),
    /** @default 1 */
    maxNodes: int.min(1),
    /** `--nproc-per-node`, with cpu/auto resolved to this machine's CPU count. @default 1 */
    nprocPerNode: int.min(1),
    /** `--rdzv-id`: the job id and workflow id. A fresh UUID with `--standalone`. @default "none" */
    rdzvId: rdzvIdSchema,
    /** Temporal frontend (`--rdzv-endpoint`/`--address`); the same as `connection.address`. */
    address: z.string().min(1),
    /** @default "default" */
    namespace: z.string().min(1),
    /** `--task-queue`: the control queue job workflows run on. @default "telastic" */
    taskQueue: z.string().min(1),
    /** `--rdzv-conf` timing. @default 600 s join, 30 s last call, 10 s heartbeat, 5 s prepare */
    rdzv: rdzvTimingSchema,
    /**
     * `--standalone`: the run command starts an embedded Temporal dev server for this one job
     * instead of using `address`; `--rdzv-backend/-endpoint/-id` are ignored, as in torchrun.
     */
    standalone: z.boolean(),
    /** @default 0 */
    maxRestarts: int.min(0),
    /** `--monitor-interval` (seconds on the command line). @default 100 */
    monitorIntervalMs: int.positive(),
    /** @default "default" */
    role: z.string().min(1),
    entrypoint: entrypointSchema,
    logDir: z.string().min(1).optional(),
    /** `--duplicate-stdout-filters`: teed stdout lines containing any of these go to filtered_stdout.log too. @default [] */
    duplicateStdoutFilters: z.array(z.string()),
    /** `--duplicate-stderr-filters`, the same for stderr (filtered_stderr.log). @default [] */
    duplicateStderrFilters: z.array(z.string()),
    /**
     * `--signals-to-handle`: each stops this node's workers with that same signal (SIGKILL after
     * the shutdown timeout) and ends the agent, as torchrun's SignalException does.
     * @default SIGTERM, SIGINT, SIGHUP, SIGQUIT
     */
    signalsToHandle: z.array(z.string().regex(/^SIG[A-Z0-9]+$/)).min(1),
    /** `--virtual-local-rank`: LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES narrowed to the worker's device. @default false */
    virtualLocalRank: z.boolean(),
    /** `--event-log-handler`: `console` prints torch's worker status events to stderr; the others record nothing. @default "null" */
    eventLogHandler: z.enum(EVENT_LOG_HANDLERS),
    /** `--numa-binding` (torch.numa.binding.AffinityMode); absent: no binding. */
    numaBinding: z.enum(NUMA_MODES).optional(),
    /** torchrun's raw `-r` value (`0`-`3` or `rank:0-3,…`), validated, parsed elsewhere. @default "0" */
    redirects: z.string(),
    /** torchrun's raw `-t` value, same form as `redirects`. @default "0" */
    tee: z.string(),
    /** Local ranks whose output reaches the console; absent means all. */
    localRanksFilter: z.array(int.min(0)).optional(),
    /** The address other nodes reach this one at; absent means this host's name. */
    localAddr: z.string().min(1).optional(),
    /** SIGTERM-to-SIGKILL grace when workers stop. @default 30000 */
    shutdownTimeoutMs: int.min(0),
    /** @default `${hostname}-${pid}` */
    nodeId: nodeIdSchema,
    /** False with `--no-coordinator`: this agent hosts no job workflows. @default true */
    coordinator: z.boolean(),
    checkpointDir: z.string().min(1).optional(),
    keepCheckpoints: int.min(1).optional(),
    /** `--max-restarts-without-progress`: the no-progress verdict (src/job/progress.ts). @default 3 (in the job spec) */
    maxRestartsWithoutProgress: int.min(0).optional(),
    /** `--progress-timeout`: how long a node's ranks may go without reporting progress. @default off */
    progressTimeoutMs: int.min(1).optional(),
    /** `--progress-start-timeout`: the same before the workers' first report. @default --progress-timeout */
    progressStartTimeoutMs: int.min(1).optional(),
    /** `--checkpoint-signal`: sent to this node's workers when the job asks for a checkpoint. @default SIGUSR1 */
    checkpointSignal: z.string().regex(/^SIG[A-Z0-9]+$/),
    /**
     * `--leave-grace`: on SIGTERM, how long the job may take to checkpoint before the node
     * leaves (a checkpoint-first drain of itself); 0 leaves at once. Fits Kubernetes' 30 s
     * terminationGracePeriodSeconds with room for stopping the workers. @default 25000
     */
    leaveGraceMs: int.min(0),
    /** `--health-check CMD` / TELASTIC_HEALTH_CHECK and its timeout (src/agent/health-check.ts); absent: none. */
    healthCheck: z.object({ command: z.string().min(1), timeoutMs: int.positive() }).optional(),
    connection: connectionOptionsSchema,
    /** One line per accepted-but-ignored input (`--master-port`, unknown `--rdzv-conf` keys…). */
    notes: z.array(z.string()),
  })
  .refine((o) => o.minNodes <= o.maxNodes, { message: 'minNodes exceeds maxNodes', path: ['minNodes'] })
  .refine((o) => o.progressStartTimeoutMs === undefined || o.progressTimeoutMs !== undefined, { message: '--progress-start-timeout needs --progress-timeout (it is the bound before the first report)', path: ['progressStartTimeoutMs'] });

/** `metrics`: compiled by src/cli/metrics-options.ts (null: no metrics port). */
export type RunOptions = z.infer<typeof runOptionsSchema> & { metrics: MetricsOptions | null };
