/**
 * A pool's durable state: the nodes whose agents registered with it and the jobs that asked it
 * for nodes. Pure data, carried by the pool workflow across continue-as-new.
 *
 * A node's states:
 *   free      registered, alive, granted to no job.
 *   granted   given to `jobId`; the job runs its rounds on it until it releases it or ends.
 *   draining  its agent is leaving (SIGTERM) while granted: the job was told, and the node goes
 *             once the job releases it.
 *   lost      its agent stopped answering (lease heartbeat) or the job that held it lost it. An
 *             agent that is alive registers again and the node is free once more, or granted
 *             again to the job that kept it (`jobId` stays while that job has not released it).
 */
import { z } from 'zod';

const id = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]*$/, 'letters, digits and . _ : @ - only');

export const poolNameSchema = id;

export type PoolNodeState = 'free' | 'granted' | 'draining' | 'lost';

/** A node as the pool grants it to a job (it joins the job as a newcomer). */
export interface GrantedNode {
  nodeId: string;
  address: string;
  slots: number;
}

export interface PoolNode {
  nodeId: string;
  address: string;
  /** Worker processes this node runs at most (its agent's --nproc). */
  slots: number;
  labels: Record<string, string>;
  /** Identifies one run of the node's agent: a restarted agent registers with a new one. */
  incarnation: string;
  state: PoolNodeState;
  jobId: string | null;
  /** Workflow time (ms) of the last state change. */
  since: number;
  heartbeatTimeoutMs: number;
}

export interface PoolJob {
  jobId: string;
  minNodes: number;
  maxNodes: number;
  /** Slots every granted node must have (the job's nproc-per-node). */
  slots: number;
  /** Workflow time (ms) of its first request: the first come is the first served. */
  since: number;
  /** Nodes this job drained: never granted to it again. */
  excluded: string[];
}

export interface PoolState {
  name: string;
  nodes: PoolNode[];
  /** Jobs in arrival order. */
  jobs: PoolJob[];
  /** Jobs that ended, newest last: a late request of theirs changes nothing. */
  ended: string[];
}

/** An agent offering its node to the pool (signal-with-start by `telastic agent`). */
export const registerSchema = z.object({
  nodeId: id,
  address: z.string().min(1),
  slots: z.number().int().min(1),
  labels: z.record(z.string()).default({}),
  incarnation: z.string().min(1).max(100),
  /** The pool marks the node lost when its agent's lease misses heartbeats this long. */
  heartbeatTimeoutMs: z.number().int().min(100).default(10_000),
});
export type RegisterRequest = z.infer<typeof registerSchema>;

/** An agent leaving the pool for good (SIGTERM). */
export const departSchema = z.object({ nodeId: id, incarnation: z.string().min(1).max(100) });
export type DepartRequest = z.infer<typeof departSchema>;

/** Why a job gives a node back: `lost` marks it lost; `drained` frees it for other jobs only. */
export const releaseReasonSchema = z.enum(['lost', 'drained', 'left', 'released']);
export type ReleaseReason = z.infer<typeof releaseReasonSchema>;

/** A job telling its pool what it wants and what it gives back (sent by the job workflow). */
export const jobRequestSchema = z.object({
  jobId: id,
  minNodes: z.number().int().min(1),
  maxNodes: z.number().int().min(1),
  slots: z.number().int().min(1),
  release: z.array(z.object({ nodeId: id, reason: releaseReasonSchema })).default([]),
  /** The job ended: every node it holds is free again and it wants no more. */
  done: z.boolean().default(false),
});
export type JobRequest = z.infer<typeof jobRequestSchema>;

export function initialPoolState(name: string): PoolState {
  return { name, nodes: [], jobs: [], ended: [] };
}

/** The pool workflow's id: `/` cannot appear in a job id, so no job can take it. */
export function poolWorkflowId(name: string): string {
  return `pool/${name}`;
}
