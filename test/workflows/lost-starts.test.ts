/**
 * Node activities whose start went unheard. A node that does not answer `prepare` is dropped and
 * the round goes on without it, when the rest are enough (workflows/round.ts prepareRound): none
 * of the round's workers started, and forming the round again cost a 2,048-node job a round each
 * time one of its node activities came late; a member's loss still counts as a restart. A
 * `runWorkers` that timed out on its heartbeat before any heartbeat is tried once more on its node
 * (workflows/group.ts unheard): the server can record a start no one got. Real test server; two
 * real node Workers answer, the third node has none.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { PrepareInput } from '../../activities/types';
import { nodeQueue } from '../../activities/types';
import type { RoundAssignment } from '../../src/job/assignment';
import { jobSpecSchema, type JobSpec } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
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
    runWorkers: async (assignment: RoundAssignment) => {
      ran.push(assignment);
      // In the 'unheard' job, b's first runWorkers never heartbeats nor ends: as a start the
      // server recorded and no one got.
      if (assignment.jobId.startsWith('unheard-') && nodeId === b && ran.filter((r) => r.jobId === assignment.jobId && r.nodeId === b).length === 1) {
        await Context.current().cancelled.catch(() => undefined);
      }
      return { state: 'succeeded' as const };
    },
    nudge: async () => undefined,
  });
  workers = [
    await Worker.create({ connection: native, taskQueue, workflowsPath: require.resolve('../../workflows') }),
    ...(await Promise.all([a, b].map((n) => Worker.create({ connection: native, taskQueue: nodeQueue(n), activities: node(n), shutdownGraceTime: '1s' })))),
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

/** Runs a job of a, b and c (c has no Worker) from `state` to its end; what a and b were asked to do in it. */
async function runJob(name: string, state: (spec: JobSpec, now: number) => JobState, maxNodes = 3, groupSize = 64) {
  const spec = jobSpecSchema.parse({
    jobId: `${name}-${run}`, minNodes: 2, maxNodes, nprocPerNode: 1, maxRestarts: 3, entrypoint: { script: 'train.py', args: [] },
    rdzv: { prepareTimeoutMs: 1_000, heartbeatTimeoutMs: 2_000, lastCallTimeoutMs: 0, groupSize },
  });
  job = await new Client({ connection }).workflow.start('elasticJob', { taskQueue, workflowId: spec.jobId, args: [{ spec, state: state(spec, Date.now()) }] });
  const result = await job.result();
  return { result, prepared: prepared.filter((p) => p.jobId === spec.jobId), ran: ran.filter((r) => r.jobId === spec.jobId) };
}

const records = (ids: string[], now: number) => ids.map((nodeId) => ({ nodeId, address: '127.0.0.1', slots: 1, joinedAt: now }));

test('a round of newcomers runs on the two that answered prepare; the third is dropped as lost, and no restart is counted', async () => {
  const { result, prepared: p, ran: r } = await runJob('newcomers', (spec, now) => ({ ...initialState(spec, now), waiting: records([a, b, c], now) }));
  expect(result).toMatchObject({ rounds: 1, restarts: 0 });
  expect(p.map((x) => x.round)).toEqual([1, 1]);
  expect(r.map((x) => [x.nodeId, x.round, x.groupWorldSize]).sort()).toEqual([[a, 1, 2], [b, 1, 2]]);
  expect(r.find((x) => x.groupRank === 0)?.nodeId).toBe(a);
}, 60_000);

test('a round of members goes on without the one that did not answer prepare, and counts its loss as one restart', async () => {
  // As after round 1 of a, b and c: all three members, the job forming round 2.
  const { result, prepared: p, ran: r } = await runJob('members', (spec, now) => ({ ...initialState(spec, now), round: 1, members: records([a, b, c], now) }));
  expect(result).toMatchObject({ rounds: 2, restarts: 1 });
  expect(result.status.lastFailure).toMatchObject({ nodeId: c, rank: null });
  expect(p.map((x) => x.round)).toEqual([2, 2]);
  expect(r.map((x) => [x.nodeId, x.round, x.groupWorldSize]).sort()).toEqual([[a, 2, 2], [b, 2, 2]]);
}, 60_000);

test('in a round of several groups, a runWorkers that timed out before its first heartbeat is tried once more on its node, and the round goes on', async () => {
  // Groups of 1: two groups. A round of one group tries none again (a node frozen before its
  // first heartbeat costs it heartbeat_timeout alone).
  const { result, ran: r } = await runJob('unheard', (spec, now) => ({ ...initialState(spec, now), waiting: records([a, b], now) }), 2, 1);
  expect(result).toMatchObject({ rounds: 1, restarts: 0 });
  expect(r.map((x) => [x.nodeId, x.round]).sort()).toEqual([[a, 1], [b, 1], [b, 1]]);
}, 60_000);
