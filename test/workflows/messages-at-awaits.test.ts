/**
 * Nothing a handler accepted is lost, whatever the job workflow is awaiting at the time. The job
 * runs on the real test server with in-memory node activities (this project's own interface)
 * that stop at one chosen activity until the test has sent a message; the message must then take
 * effect. The lost update of issue 16 (a drain accepted during the checkpoint lookup, overwritten
 * when the lookup returned) fails here.
 */
import { Connection, type WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { NodeActivities } from '../../activities/types';
import { nodeQueue } from '../../activities/types';
import { startJob } from '../../src/client/api';
import type { JobStatus } from '../../src/job/status';
import { drainUpdate, lobbyBatchSignal, scaleUpdate, statusQuery } from '../../workflows/messages';
import { testAddress } from '../setup/temporal';

const run = `${process.pid}-${Date.now().toString(36)}`;
const taskQueue = `awaits-${run}`;
const NODES = ['a', 'b', 'c'];
type Point = 'prepare' | 'findCheckpoint' | 'runWorkers';

/** Where the fakes stop: the first call of `point` on any node, until `release()`. */
let hold: { point: Point; reached: () => void; released: Promise<void> } | null = null;
function holdAt(point: Point): { reached: Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const r = new Promise<void>((res) => (reached = res));
  hold = { point, reached, released: new Promise<void>((res) => (release = res)) };
  return { reached: r, release };
}
async function maybeHold(point: Point): Promise<void> {
  const h = hold;
  if (!h || h.point !== point) return;
  hold = null;
  h.reached();
  await h.released;
}

function fakeNode(nodeId: string): Partial<NodeActivities> {
  return {
    async prepare() {
      await maybeHold('prepare');
      return { nodeId, port: 29500 };
    },
    async findCheckpoint() {
      await maybeHold('findCheckpoint');
      return { latest: null, skipped: [], skippedTotal: 0, pruned: [], prunedTotal: 0 } as never;
    },
    async runWorkers() {
      await maybeHold('runWorkers');
      // Runs until cancelled (a restart, a drain): heartbeats carry the cancellation here.
      const ctx = Context.current();
      for (;;) {
        ctx.heartbeat();
        await Promise.race([ctx.cancelled, ctx.sleep(100)]);
      }
    },
  };
}

const spec = (jobId: string) => ({
  jobId,
  minNodes: 1,
  maxNodes: 2,
  nprocPerNode: 1,
  checkpointDir: '/shared/ckpt',
  entrypoint: { script: 'train.py', args: [] },
  rdzv: { lastCallTimeoutMs: 0, heartbeatTimeoutMs: 5_000, prepareTimeoutMs: 5_000 },
  shutdownTimeoutMs: 1_000,
});
const join = (nodeId: string) => ({
  kind: 'join' as const,
  req: { nodeId, address: `10.0.0.${nodeId.charCodeAt(0)}`, slots: 1, role: 'default', entrypoint: { script: 'train.py', args: [], module: false, noPython: false } },
});

let connection: Connection;
let native: NativeConnection;
let workers: Worker[];
let running: Promise<void>[];
const started: WorkflowHandle[] = [];

beforeAll(async () => {
  native = await NativeConnection.connect({ address: testAddress() });
  connection = await Connection.connect({ address: testAddress() });
  workers = [
    await Worker.create({ connection: native, taskQueue, workflowsPath: require.resolve('../../workflows') }),
    ...(await Promise.all(NODES.map((n) => Worker.create({ connection: native, taskQueue: nodeQueue(`${n}-${run}`), activities: fakeNode(`${n}-${run}`) })))),
  ];
  running = workers.map((w) => w.run());
});

afterAll(async () => {
  for (const h of started) await h.terminate('test over').catch(() => undefined);
  for (const w of workers ?? []) w.shutdown();
  await Promise.allSettled(running ?? []);
  await connection?.close();
  await native?.close();
});

async function until(h: WorkflowHandle, what: string, ok: (s: JobStatus) => boolean, ms = 30_000): Promise<JobStatus> {
  const deadline = Date.now() + ms;
  let last: JobStatus | undefined;
  while (Date.now() < deadline) {
    last = await h.query(statusQuery);
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}; last status: ${JSON.stringify(last)}`);
}

const node = (s: JobStatus, id: string) => s.nodes.find((n) => n.nodeId === `${id}-${run}`);

const messages = {
  /** A drain of b, answered {accepted: true}: b leaves and the job runs on without it. */
  drain: {
    send: (h: WorkflowHandle) => h.executeUpdate(drainUpdate, { args: [{ nodeId: `b-${run}` }] }),
    effect: (s: JobStatus) => node(s, 'b')?.state === 'drained' && s.state === 'running' && s.worldSize === 1,
  },
  /** A scale to at most one node: the job runs on one. */
  scale: {
    send: (h: WorkflowHandle) => h.executeUpdate(scaleUpdate, { args: [{ maxNodes: 1 }] }),
    effect: (s: JobStatus) => s.maxNodes === 1 && s.state === 'running' && s.worldSize === 1,
  },
  /** A third node joins: the full job keeps it as a hot spare. */
  join: {
    send: (h: WorkflowHandle) => h.signal(lobbyBatchSignal, [join(`c-${run}`)]),
    effect: (s: JobStatus) => s.spares.includes(`c-${run}`),
  },
};

describe.each(['prepare', 'findCheckpoint', 'runWorkers'] as Point[])('while the round awaits %s', (point) => {
  test.each(Object.keys(messages) as (keyof typeof messages)[])('a %s sent then takes effect', async (kind) => {
    const h = holdAt(point);
    const job = await startJob({ connection, taskQueue }, spec(`awaits-${point}-${kind}-${run}`));
    started.push(job);
    await job.signal(lobbyBatchSignal, [join(`a-${run}`), join(`b-${run}`)]);
    await h.reached;
    await messages[kind].send(job);
    h.release();
    await until(job, `the ${kind} to take effect`, messages[kind].effect);
    await job.terminate('case over');
  });
});
