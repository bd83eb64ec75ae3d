/**
 * The job's and the lobby's timers carry summaries (the Web UI's timeline shows them instead of
 * `1 (30s)`), and the histories they make replay.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { startJob } from '../../src/client/api';
import { lobbyBatchSignal } from '../../workflows/messages';
import { testAddress } from '../setup/temporal';

const taskQueue = `timers-${process.pid}-${Date.now().toString(36)}`;
const workflowsPath = require.resolve('../../workflows');
const spec = (jobId: string, rdzv: object) => ({
  jobId, minNodes: 1, maxNodes: 2, nprocPerNode: 1, entrypoint: { script: 'train.py', args: [] }, rdzv,
});

/** The summary of every timer the workflow started, in order. */
async function timerSummaries(handle: WorkflowHandle): Promise<Array<string | undefined>> {
  const { events } = await handle.fetchHistory();
  return (events ?? [])
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => {
      const p = e.userMetadata?.summary;
      return p ? defaultPayloadConverter.fromPayload<string>(p) : undefined;
    });
}

/** Polls `cond` every 100 ms for at most 10 s (the caller's expect then says what was wrong). */
async function until(cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 100));
}

async function expectReplays(handle: WorkflowHandle): Promise<void> {
  await expect(Worker.runReplayHistory({ workflowsPath, replayName: handle.workflowId }, await handle.fetchHistory())).resolves.toBeUndefined();
}

test('join timeout, last call and the lobby\'s idle timer say what they are for', async () => {
  const native = await NativeConnection.connect({ address: testAddress() });
  const connection = await Connection.connect({ address: testAddress() });
  const client = new Client({ connection });
  const started: WorkflowHandle[] = [];
  try {
    const worker = await Worker.create({ connection: native, taskQueue, workflowsPath });
    await worker.runUntil(async () => {
      const o = { connection, taskQueue };
      const id = `timers-${Date.now().toString(36)}`;

      // Nobody joins within join_timeout: the job fails on its one timer.
      const lonely = await startJob(o, spec(`${id}-lonely`, { joinTimeoutMs: 500 }));
      started.push(lonely);
      await expect(lonely.result()).rejects.toThrow();
      expect(await timerSummaries(lonely)).toEqual(['join timeout: fails the job unless min 1 node(s) are here']);

      // It waits for its first node, then one of up to two joins: a last call for the second.
      const waiting = await startJob(o, spec(`${id}-last-call`, { lastCallTimeoutMs: 60_000 }));
      started.push(waiting);
      // The join comes once the job waits on its join timeout: a join that reached the job with
      // its start (in its first workflow task) would leave it nothing to wait for.
      await until(async () => (await timerSummaries(waiting)).length === 1);
      await waiting.signal(lobbyBatchSignal, [{ kind: 'join', req: { nodeId: 'n1', address: '127.0.0.1', slots: 1, role: 'default', entrypoint: { script: 'train.py', args: [], module: false, noPython: false } } }]);
      await until(async () => (await timerSummaries(waiting)).length >= 2);
      expect(await timerSummaries(waiting)).toEqual(['join timeout: fails the job unless min 1 node(s) are here', 'last call for more nodes (up to max 2)']);

      // A lobby with nothing to forward ends after its idle timer.
      const lobby = await client.workflow.start('jobLobby', { workflowId: `${id}-lobby`, taskQueue, args: [{ jobId: `${id}-none`, idleMs: 200 }] });
      started.push(lobby);
      await lobby.result();
      expect(await timerSummaries(lobby)).toEqual(['idle: the lobby ends unless a node joins or leaves']);
    });
    for (const h of started) await expectReplays(h);
  } finally {
    for (const h of started) await h.terminate('test over').catch(() => undefined);
    await connection.close();
    await native.close();
  }
});
