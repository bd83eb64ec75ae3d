/**
 * A Temporal server that is not there yet, or goes away mid-rendezvous, is waited out by real
 * `telastic run` agents; `drain` and `scale` sent while no coordinator runs are recorded at once
 * and applied when a controller returns.
 */
import { Client, Connection } from '@temporalio/client';
import { submitJob } from '../../src/client/pool';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../../src/temporal/ports';
import { startPrivateServer, stopPrivateServers, testAddress } from '../setup/temporal';
import { BIN, FAST_RDZV, WORKER, alive, finish, owners, poolState, recordedPids, startAgent, status, stopAll, testPool, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const agents: Agent[] = [];
const controllers: ChildProcess[] = [];
const connections: Connection[] = [];
afterAll(async () => {
  for (const c of controllers) c.kill('SIGKILL');
  await stopAll(agents);
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  await stopPrivateServers();
});

const OUTAGE_MS = 10_000;
const WAITING = /telastic: waiting for Temporal at (\S+) \(/g;
const CONNECTED = /telastic: connected to Temporal at (\S+) after/g;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function count(re: RegExp, text: string): number {
  return [...text.matchAll(re)].length;
}

async function connectTo(address: string): Promise<Connection> {
  const c = await Connection.connect({ address });
  connections.push(c);
  return c;
}

/** No Node stack trace and no SDK log line reached the user. */
function expectCleanOutput(a: Agent): void {
  expect(a.output()).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
  expect(a.output()).not.toMatch(/temporalio_client::retry|Error: .*\n\s+at /);
}

test('agents started 10 s before the server exists wait, say so once, then form the job and finish', async () => {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const out = tmpDir('early');
  const job = uniqueJobId('early');
  const args = ['--nnodes', '2', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];
  const started = Date.now();
  const pair = ['early-a', 'early-b'].map((n) => startAgent(address, n, args));
  agents.push(...pair);
  await waitFor('both agents say they wait for Temporal', () => pair.every((a) => count(WAITING, a.output()) === 1), 15_000);
  await sleep(Math.max(0, started + OUTAGE_MS - Date.now())); // the deliberate outage
  expect(pair.map((a) => a.proc.exitCode)).toEqual([null, null]);

  await startPrivateServer({ port });
  const up = Date.now();
  const conn = await connectTo(address);
  const s = await waitForRound(conn, job, (x) => x.worldSize === 2);
  expect(s.restarts).toBe(0);
  console.log(`agents before the server: server answering → round running in ${((Date.now() - up) / 1000).toFixed(1)} s`);
  finish(out);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);
  for (const a of pair) {
    expect(count(WAITING, a.output())).toBe(1);
    expect([...a.output().matchAll(WAITING)][0][1]).toBe(address);
    expect(count(CONNECTED, a.output())).toBe(1);
    expectCleanOutput(a);
  }
});

test('the server killed for 10 s during a rendezvous and started again on its database: the round forms and the job finishes', async () => {
  const port = await freePort();
  const dbFile = path.join(tmpDir('rdzv-db'), 'temporal.db');
  let server = await startPrivateServer({ port, dbFile });
  const out = tmpDir('rdzv-kill');
  const job = uniqueJobId('rdzv-kill');
  // Min 2 of 3 with a last call long enough that the kill lands in it.
  const conf = ['--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=12,join_timeout=90,prepare_timeout=3', '--shutdown-timeout', '3'];
  const args = ['--nnodes', '2:3', '--rdzv-id', job, ...conf, WORKER, '--out', out];
  const first = ['kill-a', 'kill-b'].map((n) => startAgent(server.address, n, args));
  agents.push(...first);
  const conn = await connectTo(server.address);
  await waitFor('the last call', async () => (await status(conn, job)).state === 'rendezvous');

  server.kill('SIGKILL');
  await server.exited;
  const late = startAgent(server.address, 'kill-c', args); // joins while the server is down
  agents.push(late);
  await sleep(OUTAGE_MS);
  expect([...first, late].map((a) => a.proc.exitCode)).toEqual([null, null, null]);
  server = await startPrivateServer({ port, dbFile });
  const up = Date.now();

  const conn2 = await connectTo(server.address);
  const s = await waitForRound(conn2, job, (x) => x.worldSize === 3, 90_000);
  expect(s.restarts).toBe(0);
  console.log(`server killed mid-rendezvous: restarted server answering → round of 3 running in ${((Date.now() - up) / 1000).toFixed(1)} s (round ${s.round})`);
  finish(out);
  expect(await Promise.all([...first, late].map((a) => a.exited))).toEqual([0, 0, 0]);
  expect((await status(conn2, job)).state).toBe('succeeded');
  expect(count(WAITING, late.output())).toBe(1);
  expect(count(CONNECTED, late.output())).toBe(1);
  for (const a of [...first, late]) {
    expect(count(WAITING, a.output())).toBeLessThanOrEqual(1); // the two followers may not notice a 10 s outage
    expect(count(CONNECTED, a.output())).toBe(count(WAITING, a.output()));
    expectCleanOutput(a);
  }
});

test('a pool agent and its job ride out the server killed for 10 s (longer than the pool\'s lease timeout); the agent then takes the next job', async () => {
  const port = await freePort();
  const dbFile = path.join(tmpDir('pool-db'), 'temporal.db');
  let server = await startPrivateServer({ port, dbFile });
  const pool = testPool('outage-pool', agents, [path.dirname(WORKER)], server.address);
  const controller = pool.controller();
  const agent = pool.agent('outage-n1', ['--nproc', '1']);
  const conn = await connectTo(server.address);
  const opts = { connection: conn, taskQueue: pool.taskQueue };
  const job = (name: string, out: string) => ({
    jobId: uniqueJobId(name), pool: pool.name, minNodes: 1, maxNodes: 1, nprocPerNode: 1,
    // The job's heartbeat timeout outlasts the outage; the pool's lease (3 s) does not: the pool
    // marks the node lost, and it must not take the node from the job that still runs on it.
    entrypoint: { script: WORKER, args: ['--out', out] }, rdzv: { heartbeatTimeoutMs: 30_000, lastCallTimeoutMs: 1000, prepareTimeoutMs: 3000 }, shutdownTimeoutMs: 3000,
  });
  const out = tmpDir('pool-outage');
  const first = job('pool-outage', out);
  await submitJob(opts, first);
  // Seen once in CI: the first round did not form within 60 s (describe failing); say who said what.
  const before = await waitForRound(conn, first.jobId, (s) => s.worldSize === 1).catch((err: Error) => {
    throw new Error(`${err.message}\n--- agent:\n${agent.output().slice(-3000)}\n--- controller:\n${controller.output().slice(-3000)}`);
  });
  await waitFor('its worker', () => recordedPids(out, before.round).length === 1);
  const pids = recordedPids(out, before.round);

  server.kill('SIGKILL');
  await server.exited;
  await sleep(OUTAGE_MS);
  expect(agent.proc.exitCode).toBeNull();
  expect(pids.filter(alive)).toEqual(pids);
  server = await startPrivateServer({ port, dbFile });
  const conn2 = await connectTo(server.address);
  const after = await waitForRound(conn2, first.jobId, () => true, 60_000);
  expect(after).toMatchObject({ round: before.round, restarts: 0 });
  // The agent registers again (its lease lapsed) and the pool gives the node back to the job.
  await waitFor('the node granted to the job again', async () => owners(await poolState(conn2, pool.name))['outage-n1'] === first.jobId, 30_000);
  expect(pids.filter(alive)).toEqual(pids);
  finish(out);
  await expect(new Client({ connection: conn2 }).workflow.getHandle(first.jobId).result()).resolves.toMatchObject({ restarts: 0 });

  const out2 = tmpDir('pool-outage-next');
  const next = job('pool-outage-next', out2);
  await submitJob({ connection: conn2, taskQueue: pool.taskQueue }, next);
  await waitForRound(conn2, next.jobId, (s) => s.worldSize === 1);
  finish(out2);
  await expect(new Client({ connection: conn2 }).workflow.getHandle(next.jobId).result()).resolves.toMatchObject({ restarts: 0 });
  expect(agent.proc.exitCode).toBeNull();
  expectCleanOutput(agent);
});

/** `telastic ARGS…` against the shared server: exit code, stdout+stderr, and how long it took. */
function cli(args: string[]): Promise<{ code: number; out: string; ms: number }> {
  const t = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--address', testAddress()], { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr, ms: Date.now() - t });
    });
  });
}

function startController(taskQueue: string): ChildProcess {
  const c = spawn(process.execPath, [BIN, 'controller', '--address', testAddress(), '--task-queue', taskQueue], { stdio: 'ignore' });
  controllers.push(c);
  return c;
}

test('drain and scale while no coordinator runs return at once, every time, and apply when a controller returns', async () => {
  const conn = await connectTo(testAddress());
  const out = tmpDir('queued');
  const job = uniqueJobId('queued');
  const queue = `tq-${job}`;
  const controller = startController(queue);
  const args = ['--nnodes', '1:2', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];
  const pair = ['queued-a', 'queued-b'].map((n) => startAgent(testAddress(), n, args));
  agents.push(...pair);
  const running = await waitForRound(conn, job, (s) => s.worldSize === 2);
  controller.kill('SIGKILL');
  await new Promise((r) => controller.once('exit', r));

  const target = running.nodes.find((n) => n.groupRank === 1)!.nodeId;
  // Each command's time past what `status` of a job that does not exist (start, connect, one
  // call) takes just before it: the time spent on the missing coordinator, whatever the load.
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const base = await cli(['status', `${job}-none`]);
    expect(base).toMatchObject({ code: 1 });
    const drain = await cli(['drain', job, target]);
    expect(drain).toMatchObject({ code: 0, out: `job ${job}: no coordinator answered; the drain of ${target} is recorded and applies when a coordinator returns\n` });
    const scale = await cli(['scale', job, '--max', '1']);
    expect(scale).toMatchObject({ code: 0, out: `job ${job}: no coordinator answered; the scale to --max 1 is recorded and applies when a coordinator returns\n` });
    times.push(drain.ms - base.ms, scale.ms - base.ms);
  }
  // The coordinator is tried for 2 s (UPDATE_WAIT_MS); an update left waiting would not end before a controller returns.
  expect(Math.max(...times)).toBeLessThan(6_000);
  console.log(`drain/scale with no coordinator, past a status call: ${times.map((t) => (t / 1000).toFixed(1)).join(', ')} s`);

  startController(queue);
  expect(await pair.find((a) => a.nodeId === target)!.exited).toBe(0);
  const after = await waitForRound(conn, job, (s) => s.worldSize === 1 && s.round > running.round);
  expect(after).toMatchObject({ maxNodes: 1, restarts: 0 });
  expect(after.nodes.find((n) => n.nodeId === target)?.state).toBe('drained');
  finish(out);
  expect(await pair.find((a) => a.nodeId !== target)!.exited).toBe(0);
});
