/**
 * The client side of pools: submit a job to a pool, register or withdraw a node (what
 * `telastic agent` does), and read a pool's state. Inputs are validated with the schemas the
 * workflows use; a bad input throws an Error whose message is one line naming the field.
 */
import { Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { CONTROL_QUEUE } from '../../activities/types';
import { sealedIdentity } from '../temporal/data-converter';
import { WORKFLOW_TASK_TIMEOUT } from '../job/groups';
import { jobSpecSchema, parseOrThrow, type JobSpecInput } from '../job/spec';
import type { PoolNodeView } from '../pool/decide';
import { departSchema, jobRequestSchema, poolNameSchema, poolWorkflowId, registerSchema, type DepartRequest, type PoolState, type RegisterRequest } from '../pool/state';
import type { elasticJob } from '../../workflows/job';
import type { nodePool } from '../../workflows/pool';
import { poolDepartSignal, poolJobSignal, poolNodeQuery, poolRegisterSignal, poolStatusQuery } from '../../workflows/pool-messages';
import { JobInputError, type ClientOptions } from './api';

function client(o: ClientOptions): Client {
  // With a key, an identity without the host name (the SDK's default is pid@host).
  return new Client({ connection: o.connection, namespace: o.namespace ?? 'default', dataConverter: o.dataConverter, identity: sealedIdentity(o.dataConverter, `telastic-${process.pid}`) });
}

/**
 * Submit a job to a pool: start its workflow and return at once. The pool grants it nodes; its
 * agents run the spec's entrypoint if their `--allow` lets them. A job id that is already
 * running throws JobInputError. The same as the plain SDK call
 * `client.workflow.start('elasticJob', { taskQueue: 'telastic', workflowId, args: [spec] })`.
 */
export async function submitJob(o: ClientOptions, spec: JobSpecInput & { pool: string }): Promise<WorkflowHandleWithFirstExecutionRunId<typeof elasticJob>> {
  const s = parseOrThrow(jobSpecSchema, spec, 'job spec');
  if (!s.pool) throw new JobInputError('invalid job spec: pool: required to submit a job', s.jobId);
  try {
    return await client(o).workflow.start<typeof elasticJob>('elasticJob', {
      workflowId: s.jobId,
      taskQueue: o.taskQueue ?? CONTROL_QUEUE,
      args: [{ spec: s }],
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
      staticSummary: `elastic job ${s.jobId} on pool ${s.pool}: ${s.entrypoint.script} on ${s.minNodes}:${s.maxNodes} nodes × ${s.nprocPerNode}`,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw new JobInputError(`job ${s.jobId} is already running; give another --rdzv-id`, s.jobId);
    throw err;
  }
}

/** Offer a node to a pool, starting the pool's workflow if this is its first node. */
export async function registerWithPool(o: ClientOptions, pool: string, req: RegisterRequest): Promise<void> {
  const name = parseOrThrow(poolNameSchema, pool, 'pool name');
  const r = parseOrThrow(registerSchema, req, 'register');
  await client(o).workflow.signalWithStart<typeof nodePool, [RegisterRequest]>('nodePool', {
    workflowId: poolWorkflowId(name),
    taskQueue: o.taskQueue ?? CONTROL_QUEUE,
    args: [{ name }],
    signal: poolRegisterSignal,
    signalArgs: [r],
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
    staticSummary: `pool ${name}: grants its nodes to the jobs submitted to it`,
  });
}

/** Take a node out of its pool for good (its job, if any, re-forms without it). */
export async function departFromPool(o: ClientOptions, pool: string, req: DepartRequest): Promise<void> {
  const r = parseOrThrow(departSchema, req, 'depart');
  await client(o).workflow.getHandle(poolWorkflowId(pool)).signal(poolDepartSignal, r);
}

/**
 * Tell a pool that a job holding nodes ended without saying so (terminated from the Web UI or
 * `temporal workflow terminate`, which runs no workflow code): its nodes go back to the pool.
 * Sent by the job's agents; idempotent.
 */
export async function reportJobEnded(o: ClientOptions, pool: string, jobId: string): Promise<void> {
  const req = parseOrThrow(jobRequestSchema, { jobId, minNodes: 1, maxNodes: 1, slots: 1, done: true }, 'job request');
  await client(o).workflow.getHandle(poolWorkflowId(pool)).signal(poolJobSignal, req);
}

/** Whether the job's workflow still runs (false when it ended or does not exist). */
export async function jobRunning(o: ClientOptions, jobId: string): Promise<boolean> {
  try {
    return (await client(o).workflow.getHandle(jobId).describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** One node as its pool sees it: what an agent polls. */
export async function poolNodeState(o: ClientOptions, pool: string, nodeId: string): Promise<PoolNodeView> {
  return client(o).workflow.getHandle(poolWorkflowId(pool)).query(poolNodeQuery, nodeId);
}

/** The pool's nodes (state, owner, labels) and its jobs in arrival order. */
export async function getPoolStatus(o: ClientOptions, pool: string): Promise<PoolState> {
  return client(o).workflow.getHandle(poolWorkflowId(pool)).query(poolStatusQuery);
}
