/**
 * A pool of three `telastic agent`s (stand-in workers) and one controller: jobs submitted with
 * the SDK and the CLI share the nodes, grow into freed ones, survive agent and coordinator
 * crashes, and a script outside the agents' --allow fails fast. The tests run in order and
 * share the pool.
 */
import { Client } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { cancelJob } from '../../src/client/api';
import { submitJob } from '../../src/client/pool';
import type { JobSpecInput } from '../../src/job/spec';
import { testAddress } from '../setup/temporal';
import { BIN, WORKER, alive, e2eSuite, finish, owners, poolState, recordedEnvs, recordedPids, status, testPool, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const e2e = e2eSuite();
const pool = testPool('pool', e2e.agents, [path.dirname(WORKER)]);
const FAST = { heartbeatTimeoutMs: 3000, lastCallTimeoutMs: 1000, joinTimeoutMs: 60_000, prepareTimeoutMs: 3000 };
const nodes = ['pool-n1', 'pool-n2', 'pool-n3'];
const AGENT_FLAGS = ['--nproc', '1', '--allow-env', 'POOLTEST_*'];
const agents = new Map<string, Agent>();
let controller: Agent;

function spec(name: string, out: string, minNodes: number, maxNodes: number, script = WORKER): JobSpecInput & { pool: string } {
  return {
    jobId: uniqueJobId(name), pool: pool.name, minNodes, maxNodes, nprocPerNode: 1, maxRestarts: 3,
    entrypoint: { script, args: ['--out', out] }, rdzv: FAST, shutdownTimeoutMs: 3000,
  };
}
const opts = () => ({ connection: e2e.conn, taskQueue: pool.taskQueue });
const jobNodes = async (job: string) => Object.entries(owners(await poolState(e2e.conn, pool.name))).filter(([, o]) => o === job).map(([n]) => n).sort();

beforeAll(async () => {
  controller = pool.controller();
  for (const n of nodes) agents.set(n, pool.agent(n, AGENT_FLAGS));
  await waitFor('3 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 3);
});

const outB = tmpDir('pool-b');
let jobB = '';

test('two jobs share three agents; the second grows into the first one\'s nodes when it is cancelled, spending no restart', async () => {
  const outA = tmpDir('pool-a');
  const a = await submitJob(opts(), spec('pool-a', outA, 1, 2));
  await waitForRound(e2e.conn, a.workflowId, (s) => s.worldSize === 2);
  // The CLI: prints the job id and returns at once.
  jobB = uniqueJobId('pool-b');
  const r = await promisify(execFile)(process.execPath, [
    BIN, 'submit', '--pool', pool.name, '--nnodes', '1:2', '--nproc-per-node', '1', '--max-restarts', '3', '--rdzv-id', jobB,
    '--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=1,join_timeout=60,prepare_timeout=3', '--shutdown-timeout', '3',
    '--address', testAddress(), '--task-queue', pool.taskQueue, WORKER, '--out', outB,
  ]);
  expect(r.stdout.trim()).toBe(jobB);
  await waitForRound(e2e.conn, jobB, (s) => s.worldSize === 1);
  expect(await jobNodes(a.workflowId)).toHaveLength(2);
  expect(await jobNodes(jobB)).toHaveLength(1);
  await waitFor('A\'s 2 workers', () => recordedPids(outA).length === 2);

  await cancelJob(opts(), a.workflowId);
  const grown = await waitForRound(e2e.conn, jobB, (s) => s.worldSize === 2);
  expect(grown.restarts).toBe(0);
  expect(await jobNodes(jobB)).toHaveLength(2);
  await waitFor('A\'s workers stopped', () => recordedPids(outA).filter(alive).length === 0, 15_000);
  expect((await status(e2e.conn, a.workflowId)).state).toBe('cancelled');
});

const outSdk = tmpDir('pool-sdk');
const sdkJob = { ...spec('pool-sdk', outSdk, 1, 1), env: { POOLTEST_FLAG: 'on' } };

test('a job started with the plain SDK call runs, on the node left free, with its --env', async () => {
  await new Client({ connection: e2e.conn }).workflow.start('elasticJob', { taskQueue: pool.taskQueue, workflowId: sdkJob.jobId, args: [sdkJob] });
  const s = await waitForRound(e2e.conn, sdkJob.jobId, (x) => x.worldSize === 1);
  expect(await jobNodes(sdkJob.jobId)).toHaveLength(1);
  const envs = await waitFor('the worker\'s environment', () => [...recordedEnvs(outSdk).values()].at(0));
  expect(envs).toMatchObject({ POOLTEST_FLAG: 'on', TELASTIC_JOB_ID: sdkJob.jobId, TELASTIC_ROUND: String(s.round), WORLD_SIZE: '1' });
});

test('kill -9 of an agent: its job shrinks and the pool marks the node lost; started again, it is granted back', async () => {
  const [victim] = await jobNodes(jobB);
  agents.get(victim)?.proc.kill('SIGKILL');
  await waitForRound(e2e.conn, jobB, (s) => s.worldSize === 1 && !s.nodes.some((n) => n.nodeId === victim && n.state === 'running'));
  await waitFor(`${victim} lost`, async () => owners(await poolState(e2e.conn, pool.name))[victim] === 'lost');

  agents.set(victim, pool.agent(victim, AGENT_FLAGS));
  const back = await waitForRound(e2e.conn, jobB, (s) => s.worldSize === 2 && s.nodes.some((n) => n.nodeId === victim && n.state === 'running'));
  expect(back.restarts).toBe(1); // the lost node, once
  expect(await jobNodes(jobB)).toContain(victim);
});

test('the pool\'s only coordinator killed mid-job: no training process restarts, and scheduling resumes with a new one', async () => {
  const before = await status(e2e.conn, jobB);
  await waitFor('B\'s workers of this round', () => recordedPids(outB, before.round).length === 2);
  const pids = recordedPids(outB, before.round);
  controller.proc.kill('SIGKILL');
  await controller.exited;
  // Two heartbeat timeouts with no coordinator: nothing may notice anything.
  await new Promise((r) => setTimeout(r, 6000));
  expect(pids.filter(alive)).toEqual(pids);
  controller = pool.controller();
  const after = await waitFor('a coordinator', () => status(e2e.conn, jobB), 30_000);
  expect(after).toMatchObject({ state: 'running', round: before.round, restarts: before.restarts, worldSize: 2 });
  expect(pids.filter(alive)).toEqual(pids);
});

test('scale --max grows a pool job into the node a finished job gave back, spending no restart; finished jobs free their nodes', async () => {
  finish(outSdk);
  const client = new Client({ connection: e2e.conn });
  await expect(client.workflow.getHandle(sdkJob.jobId).result()).resolves.toMatchObject({ jobId: sdkJob.jobId, restarts: 0 });
  await waitFor('1 free node', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 1);
  const before = await status(e2e.conn, jobB);
  expect(before.worldSize).toBe(2); // B is at its maximum: the free node stays free

  const r = await promisify(execFile)(process.execPath, [BIN, 'scale', jobB, '--max', '3', '--address', testAddress()]);
  expect(r.stdout).toContain(`job ${jobB}: nodes 1:3`);
  const grown = await waitForRound(e2e.conn, jobB, (s) => s.worldSize === 3);
  expect(grown.restarts).toBe(before.restarts);
  expect(await jobNodes(jobB)).toEqual(nodes);

  finish(outB);
  await expect(client.workflow.getHandle(jobB).result()).resolves.toMatchObject({ jobId: jobB, restarts: 1 });
  await waitFor('3 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 3);
});

test('a script outside the agents\' --allow: the job fails at once naming the agent and the path; the agents stay in the pool', async () => {
  const dir = tmpDir('pool-evil');
  mkdirSync(dir, { recursive: true });
  const evil = path.join(dir, 'evil.py');
  writeFileSync(evil, 'print("should never run")\n');
  // `submit --wait` follows the job and exits as `telastic run` would: 1, with the root cause.
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, 'submit', '--wait', '--pool', pool.name, '--address', testAddress(), '--task-queue', pool.taskQueue, evil], (err, _out, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr });
    });
  });
  expect(r.code).toBe(1);
  const escaped = evil.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  expect(r.stderr).toMatch(new RegExp(`telastic: job job-[0-9a-f]{8} failed: agent pool-n\\d refuses ${escaped}: not under --allow`));
  await waitFor('3 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 3);
  for (const a of agents.values()) expect(a.proc.exitCode).toBeNull();
});

test('a job terminated from outside telastic (no workflow code runs) still gives its nodes back', async () => {
  const out = tmpDir('pool-term');
  const s = spec('pool-term', out, 3, 3);
  const handle = await submitJob(opts(), s);
  await waitForRound(e2e.conn, s.jobId, (x) => x.worldSize === 3);
  await waitFor('its 3 workers', () => recordedPids(out).length === 3);
  await handle.terminate('an operator gave up on it');
  // Its agents notice (they check their job every few seconds) and tell the pool.
  await waitFor('3 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 3, 30_000);
  await waitFor('its workers stopped', () => recordedPids(out).filter(alive).length === 0, 15_000);
});

test('SIGTERM: each agent leaves the pool and exits 0', async () => {
  for (const a of agents.values()) a.proc.kill('SIGTERM');
  expect(await Promise.all([...agents.values()].map((a) => a.exited))).toEqual([0, 0, 0]);
  await waitFor('an empty pool', async () => (await poolState(e2e.conn, pool.name)).nodes.length === 0);
});
