/**
 * A newcomer that does not answer `prepare` is dropped and the round goes on without it, when the
 * rest are enough (workflows/round.ts prepareRound): none of the round's workers started, and
 * forming the round again cost a 2,048-node job minutes each time one of its node activities came
 * late. Real test server; two real node Workers answer, the third node has none.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { PrepareInput } from '../../activities/types';
import { nodeQueue } from '../../activities/types';
import type { RoundAssignment } from '../../src/job/assignment';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState } from '../../src/job/state';
import { testAddress } from '../setup/temporal';

const run = `${process.pid}-${Date.now().toString(36)}`;
const taskQueue = `missing-${run}`;
const [a, b, c] = ['a', 'b', 'c'].map((n) => `${n}-${run}`);
const prepared: PrepareInput[] = [];
const ran: RoundAssignment[] = [];

let connection: Connection;
let native: NativeConnection;
let workers: Worker[] = [];
let running: Promise<void>[] = [];
let job: WorkflowHandle | undefined;

beforeAll(async () => {
  native = await NativeConnection.connect({ address: testAddress() });
  connection = await Connection.connect({ address: testAddress() });
  const node = (nodeId: string) => ({
    prepare: async (input: PrepareInput) => (prepared.push(input), { nodeId, port: 29_500 }),
    runWorkers: async (assignment: RoundAssignment) => (ran.push(assignment), { state: 'succeeded' as const }),
    nudge: async () => undefined,
  });
  workers = [
    await Worker.create({ connection: native, taskQueue, workflowsPath: require.resolve('../../workflows') }),
    ...(await Promise.all([a, b].map((n) => Worker.create({ connection: native, taskQueue: nodeQueue(n), activities: node(n) })))),
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

test('round 1 runs on the two newcomers that answered prepare; the third is dropped as lost, and no restart is counted', async () => {
  const spec = jobSpecSchema.parse({
    jobId: `missing-${run}`, minNodes: 2, maxNodes: 3, nprocPerNode: 1, entrypoint: { script: 'train.py', args: [] },
    rdzv: { prepareTimeoutMs: 1_000, heartbeatTimeoutMs: 5_000, lastCallTimeoutMs: 0 },
  });
  const now = Date.now();
  const waiting = [a, b, c].map((nodeId) => ({ nodeId, address: '127.0.0.1', slots: 1, joinedAt: now }));
  job = await new Client({ connection }).workflow.start('elasticJob', { taskQueue, workflowId: spec.jobId, args: [{ spec, state: { ...initialState(spec, now), waiting } }] });
  const result = await job.result();
  expect(result).toMatchObject({ rounds: 1, restarts: 0 });
  expect(prepared.map((p) => p.round)).toEqual([1, 1]);
  expect(ran.map((r) => [r.nodeId, r.round, r.groupWorldSize]).sort()).toEqual([[a, 1, 2], [b, 1, 2]]);
  expect(ran.find((r) => r.groupRank === 0)?.nodeId).toBe(a);
}, 60_000);
