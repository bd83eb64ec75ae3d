/**
 * Temporal's per-execution limits, lowered far below a job's size: 12 real agents in groups of
 * 3 on a server that allows 5 pending activities, 1 in-flight update, 8 signals per execution
 * and 6 buffered events, and suggests continue-as-new after 20 events. One execution per job
 * (as before the groups) cannot even form this job: its prepare needs 12 pending activities.
 * Its 4 groups are more than group_size, so the job runs them in 2 tiers (workflows/tier.ts):
 * no execution starts more than 3 children in a phase, and none had a workflow task force-failed
 * for buffered events. 12 joins come to the job in more lobby batches than one run may take
 * signals: the job continues as new while it gathers them (before that fix it waited for ever,
 * 1 run in 4 to 10, for joins the server refused; the second test shows it on its own). At the defaults the same shape holds 2,048
 * nodes in groups of 64 without tiers, 10,000 with (docs/scale.md).
 */
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { groupWorkflowId, largeRoundSlack, lobbyCount, lobbyIndex, tierWorkflowId } from '../../src/job/groups';
import { startPrivateServer, stopPrivateServers } from '../setup/temporal';
import { WORKER, explained, finish, recordedPids, startAgent, status, stopAll, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const LIMITS = {
  'limit.numPendingActivities.error': 5,
  'history.maxInFlightUpdates': 1,
  'history.maximumSignalsPerExecution': 8,
  // Temporal suggests continue-as-new after this many events (4 Ki by default): every round here.
  'limit.historyCount.suggestContinueAsNew': 20,
  'history.maximumBufferedEventsBatch': 6,
};
const FORCE_CLOSE = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND;
const NODES = 12;
const GROUP = 3;

const agents: Agent[] = [];
const serverLog: string[] = [];
afterAll(async () => {
  await stopAll(agents);
  await stopPrivateServers();
});

/** Workflow types of an execution's pending children. */
async function pendingChildren(client: Client, id: string): Promise<string[]> {
  return ((await client.workflow.getHandle(id).describe()).raw.pendingChildren ?? []).map((c) => c.workflowTypeName ?? '');
}

/** Workflow tasks of the job's executions (every run, tier and group) the server force-failed for too many buffered events. */
async function forceClosed(client: Client): Promise<string[]> {
  const found: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowType IN ('elasticJob', 'prepareTier', 'runTier', 'prepareGroup', 'runGroup')` })) {
    const { events } = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    const n = (events ?? []).filter((e) => e.workflowTaskFailedEventAttributes?.cause === FORCE_CLOSE).length;
    if (n > 0) found.push(`${w.workflowId}: ${n}`);
  }
  return found;
}

/** Pending activities of each open group workflow of a round, and of the job itself. */
async function pendingActivities(client: Client, job: string, round: number, groups: number): Promise<{ job: number; groups: number[] }> {
  // Node activities only: a job also holds its ledger probe for a few seconds after it starts.
  const nodeActivities = ['prepare', 'runWorkers', 'findCheckpoint'];
  const pending = async (id: string) =>
    ((await client.workflow.getHandle(id).describe()).raw.pendingActivities ?? []).filter((a) => nodeActivities.includes(a.activityType?.name ?? '')).length;
  const ids = Array.from({ length: groups }, (_, i) => groupWorkflowId(job, round, 'run', i));
  return { job: await pending(job), groups: await Promise.all(ids.map(pending)) };
}

/**
 * The schedule-to-start and heartbeat timeouts of the first node activity an execution scheduled,
 * and the timer it waited on before it (0: none), in ms.
 */
async function firstActivityTimeouts(client: Client, id: string): Promise<{ scheduleToStartMs: number; heartbeatMs: number; waitedMs: number }> {
  const { events } = await client.workflow.getHandle(id).fetchHistory();
  const all = events ?? [];
  const at = all.findIndex((e) => e.activityTaskScheduledEventAttributes);
  const a = all[at]?.activityTaskScheduledEventAttributes;
  const timer = all.slice(0, at).find((e) => e.timerStartedEventAttributes)?.timerStartedEventAttributes;
  const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(d?.seconds ?? 0) * 1000 + Math.round((d?.nanos ?? 0) / 1e6);
  return { scheduleToStartMs: ms(a?.scheduleToStartTimeout), heartbeatMs: ms(a?.heartbeatTimeout), waitedMs: ms(timer?.startToFireTimeout) };
}

test('a 12-node job in groups of 3, in 2 tiers, forms, loses a node to kill -9, re-forms and finishes inside lowered per-execution limits', async () => {
  const nodeIds = Array.from({ length: NODES }, (_, i) => `scale-${i}`);
  // The premise: no lobby takes more joins than the lowered signal limit allows.
  const perLobby = new Map<number, number>();
  for (const id of nodeIds) perLobby.set(lobbyIndex(id, lobbyCount(NODES, GROUP)), (perLobby.get(lobbyIndex(id, lobbyCount(NODES, GROUP))) ?? 0) + 1);
  expect(Math.max(...perLobby.values())).toBeLessThan(LIMITS['history.maximumSignalsPerExecution']);

  const server = await startPrivateServer({ dynamicConfig: LIMITS, logLevel: 'warn', onLog: (l) => serverLog.push(l) });
  const conn = await Connection.connect({ address: server.address });
  const client = new Client({ connection: conn });
  const out = tmpDir('scale');
  const job = uniqueJobId('scale');
  const conf = `heartbeat_timeout=3,last_call_timeout=20,join_timeout=120,prepare_timeout=3,group_size=${GROUP}`;
  const args = ['--nnodes', `${NODES - 1}:${NODES}`, '--max-restarts', '2', '--rdzv-id', job, '--rdzv-conf', conf, '--shutdown-timeout', '3', WORKER, '--out', out];
  agents.push(...nodeIds.map((n) => startAgent(server.address, n, args)));

  const first = await explained(agents, () => waitForRound(conn, job, (s) => s.worldSize === NODES, 120_000));
  await waitFor(`${NODES} workers`, () => recordedPids(out, first.round).length === NODES, 60_000);
  const load = await pendingActivities(client, job, first.round, NODES / GROUP);
  expect(load.job).toBe(0);
  expect(load.groups).toEqual([GROUP, GROUP, GROUP, GROUP]);
  // 4 groups of 3: the job starts 2 run tiers, the first of 3 groups, the second of 1.
  expect(await pendingChildren(client, job)).toEqual(['runTier', 'runTier']);
  expect(await pendingChildren(client, tierWorkflowId(job, first.round, 'run', 0))).toEqual(['runGroup', 'runGroup', 'runGroup']);
  expect(await pendingChildren(client, tierWorkflowId(job, first.round, 'run', 1))).toEqual(['runGroup']);
  // A round of several groups gives a busy server slack: members pick up runWorkers as late as
  // newcomers pick up prepare (3.6 s here, not the members' 3.18 s).
  const slack = largeRoundSlack({ prepareTimeoutMs: 3_000, heartbeatTimeoutMs: 3_000, groupSize: GROUP }, NODES)!;
  expect(slack).toEqual({ runStartTimeoutMs: 3_600, runHeartbeatTimeoutMs: 3_000 });
  expect(await firstActivityTimeouts(client, groupWorkflowId(job, first.round, 'run', 0))).toEqual({ scheduleToStartMs: 3_600, heartbeatMs: 3_000, waitedMs: 0 });
  // Its 4 groups schedule their activities 100 ms apart (groupStartDelayMs), in both phases.
  expect((await firstActivityTimeouts(client, groupWorkflowId(job, first.round, 'run', 3))).waitedMs).toBe(300);
  expect((await firstActivityTimeouts(client, groupWorkflowId(job, first.round, 'prepare', 2))).waitedMs).toBe(200);

  const victim = agents[5];
  victim.proc.kill('SIGKILL');
  const second = await explained(agents, () => waitForRound(conn, job, (s) => s.worldSize === NODES - 1 && s.round > first.round, 90_000));
  expect(second.restarts).toBe(1);
  expect(second.lastFailure).toMatchObject({ nodeId: victim.nodeId, rank: null });
  expect(second.nodes.find((n) => n.nodeId === victim.nodeId)?.state).toBe('lost');
  await waitFor(`${NODES - 1} workers`, () => recordedPids(out, second.round).length === NODES - 1, 60_000);

  finish(out);
  const codes = await Promise.all(agents.filter((a) => a !== victim).map((a) => a.exited));
  expect(codes).toEqual(new Array(NODES - 1).fill(0));
  expect((await status(conn, job)).state).toBe('succeeded');
  // The job continued as new at the round boundary Temporal suggested, carrying its state.
  const desc = await client.workflow.getHandle(job).describe();
  expect(desc.runId).not.toBe(desc.raw.workflowExecutionInfo?.firstRunId);
  expect(desc.raw.workflowExecutionInfo?.firstRunId).toBeTruthy();
  // Nothing in the job came near a limit: the server refused none of its executions. The limits
  // are server-wide, so Temporal's own deployment workflow (temporal-sys-worker-deployment:…),
  // which every starting agent's build registers with at once, may hit the 1-update limit; the
  // server retries those, and they are not the job's.
  expect(await forceClosed(client)).toEqual([]);
  const refused = serverLog.filter((l) => /limit|exceed|RESOURCE_EXHAUSTED/i.test(l) && !/wf-id=temporal-sys-/.test(l));
  expect(refused).toEqual([]);
  await conn.close();
}, 300_000);

test('a job whose run may take 2 signals gathers 3 joins that come one batch each: it continues as new while it waits', async () => {
  // Temporal suggests continue-as-new after 8 events: after any lobby batch, as a long wait would.
  const server = await startPrivateServer({ dynamicConfig: { 'history.maximumSignalsPerExecution': 2, 'limit.historyCount.suggestContinueAsNew': 8 }, logLevel: 'error' });
  const conn = await Connection.connect({ address: server.address });
  const client = new Client({ connection: conn });
  const out = tmpDir('gather');
  const job = uniqueJobId('gather');
  const args = ['--nnodes', '3:3', '--rdzv-id', job, '--rdzv-conf', 'heartbeat_timeout=3,join_timeout=120,prepare_timeout=3', '--shutdown-timeout', '3', WORKER, '--out', out];
  const mine: Agent[] = [];
  // One at a time, each known to the job before the next starts: three lobby batches, where one
  // run of the job may take two. Without continuing as new the third is refused for ever.
  for (const nodeId of ['gather-0', 'gather-1', 'gather-2']) {
    const a = startAgent(server.address, nodeId, args);
    mine.push(a);
    agents.push(a);
    await explained(mine, () => waitFor(`${nodeId} known to the job`, async () => (await status(conn, job)).nodes.some((n) => n.nodeId === nodeId), 60_000));
  }
  const first = await explained(mine, () => waitForRound(conn, job, (s) => s.worldSize === 3, 60_000));
  expect(first.round).toBe(1);
  // Round 1 runs in a later run than the first: the job continued as new before any round ran.
  const desc = await client.workflow.getHandle(job).describe();
  expect(desc.runId).not.toBe(desc.raw.workflowExecutionInfo?.firstRunId);
  finish(out);
  expect(await Promise.all(mine.map((a) => a.exited))).toEqual([0, 0, 0]);
  expect((await status(conn, job)).state).toBe('succeeded');
  await conn.close();
}, 180_000);
