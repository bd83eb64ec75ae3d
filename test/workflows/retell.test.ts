/**
 * A job run that continued from another tells again the nodes the state says were dropped as
 * lost: the earlier run's nudges, queued or in flight, ended with it (workflows/job-run.ts
 * retell). Real test server, a real node Worker recording the nudges it gets.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { NudgeInput } from '../../activities/types';
import { nodeQueue } from '../../activities/types';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState } from '../../src/job/state';
import { testAddress } from '../setup/temporal';

const run = `${process.pid}-${Date.now().toString(36)}`;
const taskQueue = `retell-${run}`;
const told: { input: NudgeInput; from: string | undefined }[] = [];

let connection: Connection;
let native: NativeConnection;
let workers: Worker[] = [];
let running: Promise<void>[] = [];
let job: WorkflowHandle | undefined;

beforeAll(async () => {
  native = await NativeConnection.connect({ address: testAddress() });
  connection = await Connection.connect({ address: testAddress() });
  const nudge = async (input: NudgeInput) => void told.push({ input, from: Context.current().info.workflowExecution?.workflowId });
  workers = [
    await Worker.create({ connection: native, taskQueue, workflowsPath: require.resolve('../../workflows') }),
    ...(await Promise.all(['lost', 'drained'].map((n) => Worker.create({ connection: native, taskQueue: nodeQueue(`${n}-${run}`), activities: { nudge } })))),
  ];
  running = workers.map((w) => w.run());
});

afterAll(async () => {
  await job?.terminate('test over').catch(() => undefined);
  for (const w of workers) w.shutdown();
  await Promise.allSettled(running);
  await connection?.close();
  await native?.close();
});

test('a run carried on from another nudges the nodes dropped as lost that have not joined since, with their fate', async () => {
  const spec = jobSpecSchema.parse({ jobId: `retell-${run}`, minNodes: 1, maxNodes: 2, nprocPerNode: 1, entrypoint: { script: 'train.py', args: [] } });
  const state = {
    ...initialState(spec, Date.now()),
    round: 3,
    departed: [
      { nodeId: `lost-${run}`, reason: 'lost' as const, round: 3 },
      { nodeId: `drained-${run}`, reason: 'drained' as const, round: 2 },
    ],
  };
  job = await new Client({ connection }).workflow.start('elasticJob', { taskQueue, workflowId: spec.jobId, args: [{ spec, state }] });
  const deadline = Date.now() + 30_000;
  while (told.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1000)); // a nudge to the drained node would come with it
  expect(told).toEqual([{ input: { jobId: spec.jobId, nodeId: `lost-${run}`, fate: { node: 'lost', round: 3 } }, from: spec.jobId }]);
});
