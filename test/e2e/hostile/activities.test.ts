/**
 * Audit findings 1 (node activities trust their input) against a real pool agent: a submitter's
 * own workflow (attacker.ts) schedules the agent's node activities directly, with inputs that
 * `telastic submit` would never send. The agent must refuse each one non-retryably, naming the
 * field, and change nothing: files outside --allow stay, no directory appears outside its run
 * dir, and the job it runs keeps its workers.
 */
import { existsSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeQueue } from '../../../activities/types';
import { submitJob } from '../../../src/client/pool';
import { testAddress } from '../../setup/temporal';
import { WORKER, alive, e2eSuite, owners, poolState, recordedPids, status, testPool, tmpDir, uniqueJobId, waitFor } from '../harness';
import { startAttacker, type Attacker, type AttackResult } from './attacker';

const e2e = e2eSuite();
const allowed = tmpDir('hostile-allowed');
const pool = testPool('hostile', e2e.agents, [path.dirname(WORKER), allowed]);
const node = `hostile-${process.pid}`;
// startTelastic's state dir for the agent, and the run dir the agent keeps error files in.
const stateDir = path.join(os.tmpdir(), 'telastic-test-state', node);
const runDir = path.join(stateDir, 'errors', node);
const victim = tmpDir('hostile-victim');
const VICTIM_FILES = ['notes', 'report.pdf', '.bashrc', 'model-final', 'todo'];
const jobOut = tmpDir('hostile-job');
const attackOut = { jobId: tmpDir('hostile-attack-id'), slots: tmpDir('hostile-attack-slots') };
let attacker: Attacker;
let jobPid = 0;

function plantVictim(): void {
  const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
  for (const f of VICTIM_FILES) {
    writeFileSync(path.join(victim, f), `${f}\n`);
    if (f !== 'todo') utimesSync(path.join(victim, f), twoDaysAgo, twoDaysAgo);
  }
}

/** A round assignment as a job workflow would send it, running an allowed script for 1 s. */
function assignment(out: string, over: Record<string, unknown>): Record<string, unknown> {
  return {
    jobId: 'attack-job', round: 1, nodeId: node, role: 'default', groupRank: 0, groupWorldSize: 1, rankOffset: 0,
    localWorldSize: 1, worldSize: 1, masterAddr: '127.0.0.1', masterPort: 29_500, restartCount: 0, maxRestarts: 0,
    heartbeatIntervalMs: 1000,
    launch: { entrypoint: { script: WORKER, args: ['--out', out, '--seconds', '1'], module: false, noPython: false }, env: {} },
    ...over,
  };
}

function expectRefused(r: AttackResult, field: string, value: string): void {
  // The whole answer on failure: what the agent did instead.
  expect(r).toEqual(expect.objectContaining({ ok: false, nonRetryable: true, type: 'NotAllowed' }));
  const message = r.ok ? '' : r.message;
  expect(message).toContain(`agent ${node} refuses ${field}`);
  expect(message).toContain(value);
  expect(message).not.toContain('\n');
}

const victimLeft = () => readdirSync(victim).sort();

beforeAll(async () => {
  rmSync(stateDir, { recursive: true, force: true });
  plantVictim();
  symlinkSync(victim, path.join(allowed, 'ckpt-link'));
  pool.controller();
  pool.agent(node, ['--nproc', '1']);
  attacker = await startAttacker(testAddress());
  await waitFor('the agent free in its pool', async () => owners(await poolState(e2e.conn, pool.name))[node] === 'free');
  // A real job on the agent: an attack must not disturb its workers.
  const jobId = uniqueJobId('hostile-job');
  await submitJob({ connection: e2e.conn, taskQueue: pool.taskQueue }, {
    jobId, pool: pool.name, minNodes: 1, maxNodes: 1, nprocPerNode: 1, maxRestarts: 0,
    entrypoint: { script: WORKER, args: ['--out', jobOut] }, shutdownTimeoutMs: 3000,
    rdzv: { heartbeatTimeoutMs: 3000, lastCallTimeoutMs: 1000, joinTimeoutMs: 60_000, prepareTimeoutMs: 3000 },
  });
  [jobPid] = await waitFor('the job\'s worker pid', () => (recordedPids(jobOut).length === 1 ? recordedPids(jobOut) : null));
}, 150_000);

afterAll(async () => {
  await attacker?.close();
  for (const d of [allowed, victim, jobOut, attackOut.jobId, attackOut.slots, stateDir]) rmSync(d, { recursive: true, force: true });
});

test('findCheckpoint with keep=1 on a directory outside --allow is refused, and every file there stays', async () => {
  const r = await attacker.run(nodeQueue(node), 'findCheckpoint', { jobId: 'x', dir: victim, keep: 1 });
  expectRefused(r, 'dir', victim);
  expect(victimLeft()).toEqual([...VICTIM_FILES].sort());
});

test('findCheckpoint on a directory inside --allow that is a symlink to one outside is refused', async () => {
  const link = path.join(allowed, 'ckpt-link');
  const r = await attacker.run(nodeQueue(node), 'findCheckpoint', { jobId: 'x', dir: link, keep: 1 });
  expectRefused(r, 'dir', link);
  expect(victimLeft()).toEqual([...VICTIM_FILES].sort());
  const wait = await attacker.run(nodeQueue(node), 'waitForCheckpoint', { jobId: 'x', dir: link, baseline: null, requestedAt: 0, timeoutMs: 1000 });
  expectRefused(wait, 'dir', link);
});

test('runWorkers with jobId ../../x is refused, and no directory appears outside the agent\'s run dir', async () => {
  const escaped = path.resolve(runDir, '../../x');
  const r = await attacker.run(nodeQueue(node), 'runWorkers', assignment(attackOut.jobId, { jobId: '../../x' }), 30_000);
  expect(existsSync(escaped) ? readdirSync(escaped) : 'nothing there').toBe('nothing there');
  expect(recordedPids(attackOut.jobId)).toEqual([]);
  expectRefused(r, 'jobId', '../../x');
});

test('runWorkers with localWorldSize 3 on an agent with --nproc 1 is refused', async () => {
  const r = await attacker.run(nodeQueue(node), 'runWorkers', assignment(attackOut.slots, { jobId: 'attack-job', localWorldSize: 3, worldSize: 3 }), 30_000);
  expect(recordedPids(attackOut.slots)).toEqual([]);
  expectRefused(r, 'localWorldSize', '3');
  expect(r.ok ? '' : r.message).toContain('1 slots (--nproc)');
});

test('after the refused attacks the job\'s worker still runs, in the same round', async () => {
  expect(alive(jobPid)).toBe(true);
  const s = await status(e2e.conn, (await poolState(e2e.conn, pool.name)).nodes.find((n) => n.nodeId === node)?.jobId as string);
  expect(s).toMatchObject({ state: 'running', restarts: 0 });
  expect(recordedPids(jobOut)).toEqual([jobPid]);
});
