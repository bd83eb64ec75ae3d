/**
 * What a job's executions cost in Temporal, read from their histories after a benchmark: events
 * (per round for the job workflow, whose rounds share one history), signals received, and the
 * peak number of pending activities, counted exactly from scheduled/closed activity events.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';

type Event = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

export interface ExecutionCost {
  workflowId: string;
  runId: string;
  type: string;
  events: number;
  signals: number;
  peakPendingActivities: number;
  activityTimeouts: number;
  /** Workflow tasks that failed (e.g. force-failed by the server) or timed out (a busy worker). */
  taskFailures: number;
  taskTimeouts: number;
}

function cost(workflowId: string, runId: string, type: string, events: Event[]): ExecutionCost {
  let pending = 0;
  let peak = 0;
  let signals = 0;
  let timeouts = 0;
  let taskFailures = 0;
  let taskTimeouts = 0;
  for (const e of events) {
    if (e.workflowTaskFailedEventAttributes) taskFailures++;
    if (e.workflowTaskTimedOutEventAttributes) taskTimeouts++;
    if (e.activityTaskScheduledEventAttributes) peak = Math.max(peak, ++pending);
    if (e.activityTaskCompletedEventAttributes || e.activityTaskFailedEventAttributes || e.activityTaskCanceledEventAttributes) pending--;
    if (e.activityTaskTimedOutEventAttributes) {
      pending--;
      timeouts++;
    }
    if (e.workflowExecutionSignaledEventAttributes) signals++;
  }
  return { workflowId, runId, type, events: events.length, signals, peakPendingActivities: peak, activityTimeouts: timeouts, taskFailures, taskTimeouts };
}

async function eventsOf(client: Client, workflowId: string, runId: string): Promise<Event[]> {
  const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return h.events ?? [];
}

/** Every execution of the job, its lobbies and its groups (all runs), with its cost. */
export async function executionCosts(client: Client, jobId: string): Promise<ExecutionCost[]> {
  const out: ExecutionCost[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowType IN ('elasticJob', 'jobLobby', 'prepareGroup', 'runGroup')` })) {
    if (w.workflowId !== jobId && !w.workflowId.startsWith(`${jobId}/`)) continue;
    out.push(cost(w.workflowId, w.runId, w.type, await eventsOf(client, w.workflowId, w.runId)));
  }
  return out;
}

/**
 * The job workflow's events per round: from the first event that starts round R's prepare
 * groups to the first of round R+1 (round 0 = before the first round: the joins).
 */
export async function jobEventsPerRound(client: Client, jobId: string): Promise<Map<number, number>> {
  const perRound = new Map<number, number>();
  for await (const w of client.workflow.list({ query: `WorkflowId = '${jobId}'` })) {
    let round = 0;
    for (const e of await eventsOf(client, w.workflowId, w.runId)) {
      const m = /\/round-(\d+)\/prepare-/.exec(e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId ?? '');
      if (m) round = Math.max(round, Number(m[1]));
      perRound.set(round, (perRound.get(round) ?? 0) + 1);
    }
  }
  return perRound;
}
