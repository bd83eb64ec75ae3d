/**
 * The TypeScript client API: start, join, scale, drain, cancel and inspect jobs through a
 * `@temporalio/client` connection. Inputs are validated with the same zod schemas the
 * workflow uses; a bad input throws an Error whose message is one line naming the field.
 */
import { Client, Connection, WorkflowIdConflictPolicy, WorkflowNotFoundError, WorkflowUpdateFailedError, isGrpcServiceError, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { ApplicationFailure, NamespaceNotFoundError, type DataConverter, type Payload } from '@temporalio/common';
import { CONTROL_QUEUE } from '../../activities/types';
import { sealedIdentity } from '../temporal/data-converter';
import { drainRequestSchema, joinRequestSchema, jobSpecSchema, leaveRequestSchema, parseOrThrow, scaleRequestSchema } from '../job/spec';
import type { JobSpecInput, ScaleRequest } from '../job/spec';
import { WORKFLOW_TASK_TIMEOUT, lobbyCount, lobbyIndex, lobbyWorkflowId } from '../job/groups';
import type { JobStatus } from '../job/status';
import { drainSignal, drainUpdate, lobbySignal, nodeQuery, scaleSignal, scaleUpdate, statusQuery, type LobbyEvent, type NodeView } from '../../workflows/messages';
import type { elasticJob } from '../../workflows/job';
import type { jobLobby } from '../../workflows/lobby';

export { WORKFLOW_TASK_TIMEOUT } from '../job/groups';

export interface ClientOptions {
  connection: Connection;
  namespace?: string;
  /** The control task queue job workflows run on. @default 'telastic' */
  taskQueue?: string;
  /**
   * How payloads are encoded; for sealed jobs `await sealedDataConverter([keyFile])` (exported),
   * what the CLI uses with TELASTIC_ENCRYPTION_KEY_FILE. @default the SDK's: nothing sealed
   */
  dataConverter?: DataConverter;
}

/** A rejected message (bad input or a mismatch), with the workflow's one-line reason. */
export class JobInputError extends Error {
  constructor(message: string, readonly jobId: string) {
    super(message);
    this.name = 'JobInputError';
  }
}

function client(o: ClientOptions): Client {
  // With a key, an identity without the host name (the SDK's default is pid@host).
  return new Client({ connection: o.connection, namespace: o.namespace ?? 'default', dataConverter: o.dataConverter, identity: sealedIdentity(o.dataConverter, `telastic-${process.pid}`) });
}

async function rethrowRejection<T>(jobId: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) throw new JobInputError(err.cause.message, jobId);
    throw err;
  }
}

/** Start the job's workflow, or return the running one with this id. */
export async function startJob(o: ClientOptions, spec: JobSpecInput): Promise<WorkflowHandleWithFirstExecutionRunId<typeof elasticJob>> {
  const s = parseOrThrow(jobSpecSchema, spec, 'job spec');
  return client(o).workflow.start<typeof elasticJob>('elasticJob', {
    workflowId: s.jobId,
    taskQueue: o.taskQueue ?? CONTROL_QUEUE,
    args: [{ spec: s }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
    staticSummary: `elastic job ${s.jobId}: ${s.entrypoint.script} on ${s.minNodes}:${s.maxNodes} nodes × ${s.nprocPerNode}`,
  });
}

/**
 * Opens the input of the current run of a job (or pool) workflow with `o.dataConverter`'s
 * codecs, and so throws the codec's one-line error (SealedPayloadError) when it is sealed with a
 * key this process lacks; a workflow that does not exist yet has nothing to open. A node checks
 * this before it offers itself: admitted, it would hold a place in a round (or a pool) whose
 * tasks it cannot open, and the job would re-form once it stopped.
 */
export async function checkCanOpen(o: ClientOptions, workflowId: string): Promise<void> {
  const c = client(o);
  let page;
  try {
    page = await c.workflowService.getWorkflowExecutionHistory({ namespace: c.options.namespace, execution: { workflowId }, maximumPageSize: 1 });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND) return;
    throw err;
  }
  let payloads = (page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? []) as Payload[];
  for (const codec of [...(o.dataConverter?.payloadCodecs ?? [])].reverse()) payloads = await codec.decode(payloads);
}

/** gRPC's NOT_FOUND (grpc/status.h). */
const GRPC_NOT_FOUND = 5;

/** Which lobby a node enters a job through: from the job's maxNodes and group size. */
export interface LobbyAddress {
  jobId: string;
  maxNodes: number;
  groupSize: number;
}

/**
 * Offer a node to a job, or take it out (a leave), through the job's lobby: a signal with start,
 * which Temporal keeps even while no coordinator runs, and which never counts against the job's
 * in-flight updates however many nodes join at once. The job validates the join; the node's
 * agent learns the answer from `nodeState` ('rejected' with the reason, or its state).
 */
export async function sendToLobby(o: ClientOptions, at: LobbyAddress, event: LobbyEvent): Promise<void> {
  const req = event.kind === 'join' ? parseOrThrow(joinRequestSchema, event.req, 'join') : parseOrThrow(leaveRequestSchema, event.req, 'leave');
  const index = lobbyIndex(req.nodeId, lobbyCount(at.maxNodes, at.groupSize));
  await client(o).workflow.signalWithStart<typeof jobLobby, [LobbyEvent]>('jobLobby', {
    workflowId: lobbyWorkflowId(at.jobId, index),
    taskQueue: o.taskQueue ?? CONTROL_QUEUE,
    args: [{ jobId: at.jobId }],
    signal: lobbySignal,
    signalArgs: [{ ...event, req } as LobbyEvent],
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
    staticSummary: `lobby ${index} of job ${at.jobId}: forwards joins and leaves in batches`,
  });
}

/** One node's state in a job (small, whatever the job's size): what an agent polls. */
export async function nodeState(o: ClientOptions, jobId: string, nodeId: string): Promise<NodeView> {
  return client(o).workflow.getHandle(jobId).query(nodeQuery, nodeId);
}

/** How long a coordinator gets to validate and apply a scale or drain before it is sent as a signal. */
export const UPDATE_WAIT_MS = 2000;

/**
 * Change the job's min/max nodes. Validated and applied by the coordinator when one answers
 * within `waitMs` (a bad request throws `JobInputError`); otherwise sent as a signal, which the
 * server keeps until a coordinator returns, and which that coordinator validates then
 * (`'queued'`). An unknown job throws WorkflowNotFoundError.
 */
export async function scaleJob(o: ClientOptions, jobId: string, req: ScaleRequest, waitMs = UPDATE_WAIT_MS): Promise<{ minNodes: number; maxNodes: number } | 'queued'> {
  const r = parseOrThrow(scaleRequestSchema, req, 'scale');
  const handle = client(o).workflow.getHandle(jobId);
  return updateOrSignal(o, jobId, waitMs, () => handle.executeUpdate(scaleUpdate, { args: [r] }), () => handle.signal(scaleSignal, r));
}

/**
 * Drain a node: like `scaleJob`, an update when a coordinator answers, else a kept signal.
 * `checkpointFirst`: the job's workers are asked to checkpoint first and the node goes once a
 * newer checkpoint is complete or after `graceMs` (default 60 s).
 */
export async function drainNode(
  o: ClientOptions,
  jobId: string,
  nodeId: string,
  waitMs = UPDATE_WAIT_MS,
  opts: { checkpointFirst?: boolean; graceMs?: number } = {},
): Promise<'applied' | 'queued'> {
  const r = parseOrThrow(drainRequestSchema, { nodeId, ...opts }, 'drain');
  const handle = client(o).workflow.getHandle(jobId);
  const applied = await updateOrSignal(o, jobId, waitMs, () => handle.executeUpdate(drainUpdate, { args: [r] }), () => handle.signal(drainSignal, r));
  return applied === 'queued' ? 'queued' : 'applied';
}

/**
 * The update, if a coordinator answers within `waitMs`; else the signal. Updates need a running
 * worker; without one the call ends in a deadline, "Call cancelled" or an RST_STREAM CANCEL
 * depending on timing, so every error but a rejection or an unknown job falls back. An update
 * that timed out may still be delivered later, as well as the signal: both handlers are
 * idempotent (draining a drained node, setting the same min/max again).
 */
async function updateOrSignal<T>(o: ClientOptions, jobId: string, waitMs: number, update: () => Promise<T>, signal: () => Promise<void>): Promise<T | 'queued'> {
  try {
    return await rethrowRejection(jobId, o.connection.withDeadline(Date.now() + waitMs, update));
  } catch (err) {
    if (err instanceof JobInputError || err instanceof WorkflowNotFoundError || err instanceof NamespaceNotFoundError) throw err;
    await signal();
    return 'queued';
  }
}

/** Cancel the job: every node's workers are stopped and every `telastic run` exits non-zero. */
export async function cancelJob(o: ClientOptions, jobId: string): Promise<void> {
  await client(o).workflow.getHandle(jobId).cancel();
}

/**
 * The job's status object: a running job answers the `status` query; a closed one (which no
 * worker may be left to query) keeps its final status in its memo.
 */
export async function getJobStatus(o: ClientOptions, jobId: string): Promise<JobStatus> {
  const handle = client(o).workflow.getHandle(jobId);
  const desc = await handle.describe();
  if (desc.status.name === 'RUNNING') return handle.query(statusQuery);
  const memo = desc.memo?.status as JobStatus | undefined;
  if (memo) return memo;
  throw new Error(`job ${jobId} is ${desc.status.name.toLowerCase()} and left no final status (it did not end by itself)`);
}
