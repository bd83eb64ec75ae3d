/**
 * Outages: the coordinator (a `telastic controller`) killed mid-job, and the Temporal server
 * itself killed and restarted on its database file. Training goes on through both.
 */
import { Connection } from '@temporalio/client';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { drainNode } from '../../src/client/api';
import { freePort } from '../../src/temporal/ports';
import { startPrivateServer, stopPrivateServers, testAddress } from '../setup/temporal';
import { BIN, FAST_RDZV, WORKER, alive, finish, recordedEnvs, recordedPids, startAgent, status, stopAll, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const agents: Agent[] = [];
const controllers: ReturnType<typeof spawn>[] = [];
afterAll(async () => {
  for (const c of controllers) c.kill('SIGKILL');
  await stopAll(agents);
  await stopPrivateServers();
});

function startController(address: string, taskQueue: string): ReturnType<typeof spawn> {
  const c = spawn(process.execPath, [BIN, 'controller', '--address', address, '--task-queue', taskQueue], { stdio: 'ignore' });
  controllers.push(c);
  return c;
}

test('coordinator crash: training is untouched while no controller runs; a drain sent meanwhile applies when one returns', async () => {
  const conn = await Connection.connect({ address: testAddress() });
  const out = tmpDir('coord');
  const job = uniqueJobId('coord');
  const queue = `tq-${job}`;
  let controller = startController(testAddress(), queue);
  const args = ['--nnodes', '1:2', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];
  const pair = ['coord-a', 'coord-b'].map((n) => startAgent(testAddress(), n, args));
  agents.push(...pair);
  const running = await waitForRound(conn, job, (s) => s.worldSize === 2);
  await waitFor('2 workers', () => recordedPids(out, running.round).length === 2);
  const pids = recordedPids(out, running.round);

  controller.kill('SIGKILL');
  await new Promise((r) => controller.once('exit', r));
  const drainTarget = running.nodes.find((n) => n.groupRank === 1)!.nodeId;
  await expect(drainNode({ connection: conn }, job, drainTarget, 2000)).resolves.toBe('queued');
  // Through more than two heartbeat timeouts without a coordinator, the workers run on.
  await new Promise((r) => setTimeout(r, 7000));
  expect(pids.every(alive)).toBe(true);
  expect([...recordedEnvs(out).values()].every((e) => e.TELASTIC_ROUND === String(running.round))).toBe(true);

  controller = startController(testAddress(), queue);
  const drained = agents.find((a) => a.nodeId === drainTarget)!;
  expect(await drained.exited).toBe(0);
  const after = await waitForRound(conn, job, (s) => s.worldSize === 1 && s.round > running.round);
  expect(after.nodes.find((n) => n.nodeId === drainTarget)?.state).toBe('drained');
  expect(after.restarts).toBe(0);
  finish(out);
  expect(await agents.find((a) => a.nodeId !== drainTarget && pair.includes(a))!.exited).toBe(0);
  await conn.close();
});

test('Temporal server restart: killed mid-job and started again on the same database, the job finishes', async () => {
  const dir = tmpDir('server');
  const dbFile = path.join(dir, 'temporal.db');
  const port = await freePort();
  let server = await startPrivateServer({ port, dbFile });
  const out = tmpDir('server-out');
  const job = uniqueJobId('server');
  const args = ['--nnodes', '2', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];
  const pair = ['srv-a', 'srv-b'].map((n) => startAgent(server.address, n, args));
  agents.push(...pair);
  const conn = await Connection.connect({ address: server.address });
  const running = await waitForRound(conn, job, (s) => s.worldSize === 2);
  await waitFor('2 workers', () => recordedPids(out, running.round).length === 2);
  await conn.close();

  server.kill('SIGKILL');
  await server.exited;
  server = await startPrivateServer({ port, dbFile });
  const conn2 = await Connection.connect({ address: server.address });
  const back = await waitFor('job answers again', () => status(conn2, job));
  expect(back.state).not.toBe('failed');
  finish(out);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);
  expect((await status(conn2, job)).state).toBe('succeeded');
  await conn2.close();
});
