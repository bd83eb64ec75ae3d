/**
 * Real PyTorch (CPU, gloo): examples/train.py, unmodified, on 2 nodes × 2 processes with
 * --checkpoint-dir, under `telastic run` and submitted to a pool of `telastic agent`s. Progress
 * lines `step world_size time` come from rank 0 (--progress).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { submitJob } from '../../src/client/pool';
import { testAddress } from '../setup/temporal';
import { ROOT, alive, startAgent, status, stopAll, testPool, tmpDir, uniqueJobId, waitFor, waitForRound, e2eSuite, type Agent } from './harness';

const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const TRAIN = path.join(ROOT, 'examples', 'train.py');
const env = { PYTHON_EXEC: PYTHON };
const CKPT_EVERY = 20;

const e2e = e2eSuite();
const agents = e2e.agents;

interface Job { job: string; dir: string; ckpt: string; progress: string; args: (nodes: string, ...extra: string[]) => string[] }

function newJob(name: string, steps: number, stepTime = 0.03): Job {
  const dir = tmpDir(name);
  const job = uniqueJobId(name);
  const ckpt = path.join(dir, 'ckpt');
  const progress = path.join(dir, 'progress.log');
  const args = (nodes: string, ...extra: string[]) => [
    '--nnodes', nodes, '--nproc-per-node', '2', '--max-restarts', '3', '--rdzv-id', job, '--checkpoint-dir', ckpt,
    '--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=1,prepare_timeout=3', '--shutdown-timeout', '3',
    TRAIN, '--steps', String(steps), '--ckpt-every', String(CKPT_EVERY), '--step-time', String(stepTime), '--progress', progress, '--final', path.join(dir, 'final.json'), ...extra,
  ];
  return { job, dir, ckpt, progress, args };
}

function progress(file: string): { step: number; world: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => {
    const [step, world] = l.split(' ').map(Number);
    return { step, world };
  });
}
const lastStep = (file: string) => progress(file).at(-1)?.step ?? 0;

function start(j: Job, nodeId: string, nodes: string, ...extra: string[]): Agent {
  const a = startAgent(testAddress(), nodeId, j.args(nodes, ...extra), env);
  agents.push(a);
  return a;
}

/** Steps after the recovery restart from the last checkpoint: at most one interval repeated. */
function expectResumedFromCheckpoint(lines: { step: number; world: number }[], world: number): void {
  const firstAfter = lines.findIndex((l) => l.world === world);
  expect(firstAfter).toBeGreaterThan(0);
  const before = lines[firstAfter - 1].step;
  const resumedAt = lines[firstAfter].step - 1;
  expect(resumedAt % CKPT_EVERY).toBe(0);
  expect(resumedAt).toBeGreaterThan(0);
  expect(before - resumedAt).toBeLessThanOrEqual(CKPT_EVERY);
  expect(before - resumedAt).toBeGreaterThanOrEqual(0);
}

/** Largest absolute difference between two final.json files' weights (of equal shape). */
function maxWeightDiff(fileA: string, fileB: string): number {
  const [a, b] = [fileA, fileB].map((f) => (JSON.parse(readFileSync(f, 'utf8')).weights as number[][]).flat());
  expect(a).toHaveLength(b.length);
  return Math.max(...a.map((x, i) => Math.abs(x - b[i])));
}

const COMPLETION_STEPS = 60;
/** final.json of the 60-step job under `telastic run`; set by runToCompletion, reused by the pool test. */
let runFinal: string | undefined;

/** The 60-step DDP job (step time 0) on 2 `telastic run` nodes × 2 processes, to its end. */
async function runToCompletion(): Promise<Job> {
  const j = newJob('torch-ref', COMPLETION_STEPS, 0);
  const pair = [start(j, 'tref-a', '2'), start(j, 'tref-b', '2')];
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);
  runFinal = path.join(j.dir, 'final.json');
  return j;
}

test('to completion: final weights equal a single-process run on the same data and global batch', async () => {
  const j = await runToCompletion();
  const refFile = path.join(j.dir, 'reference.json');
  await promisify(execFile)(PYTHON, [TRAIN, '--steps', String(COMPLETION_STEPS), '--ckpt-dir', path.join(j.dir, 'ref-ckpt'), '--final', refFile], { env: { ...process.env, TELASTIC_RESUME_FROM: '' } });
  const dist = JSON.parse(readFileSync(runFinal!, 'utf8'));
  const ref = JSON.parse(readFileSync(refFile, 'utf8'));
  expect(dist).toMatchObject({ step: 60, world_size: 4 });
  expect(ref).toMatchObject({ step: 60, world_size: 1 });
  expect(maxWeightDiff(runFinal!, refFile)).toBeLessThan(1e-4);
  expect(Math.max(...(dist.weights as number[][]).flat().map(Math.abs))).toBeGreaterThan(0.01); // trained, not all zero
});

test('submitted to a pool of 2 agents (--nproc 2): the same final weights as under telastic run', async () => {
  // Compared with the previous test's run; run alone (jest -t), it makes its own.
  const reference = runFinal ?? path.join((await runToCompletion()).dir, 'final.json');
  const dir = tmpDir('torch-pool');
  // The agents run the examples and keep the job's checkpoints (they list and prune them) in dir.
  const pool = testPool('torch-pool', agents, [path.dirname(TRAIN), dir]);
  // Stopped when the job ends, so that the next tests' training does not share the CPUs with them.
  const procs = [pool.controller(), ...['tpool-a', 'tpool-b'].map((n) => pool.agent(n, ['--nproc', '2'], env))];
  const final = path.join(dir, 'final.json');
  try {
    const handle = await submitJob({ connection: e2e.conn, taskQueue: pool.taskQueue }, {
      jobId: uniqueJobId('torch-pool'), pool: pool.name, minNodes: 2, maxNodes: 2, nprocPerNode: 2, maxRestarts: 3,
      checkpointDir: path.join(dir, 'ckpt'), shutdownTimeoutMs: 3000,
      rdzv: { heartbeatTimeoutMs: 3000, lastCallTimeoutMs: 1000, prepareTimeoutMs: 3000 },
      entrypoint: { script: TRAIN, args: ['--steps', String(COMPLETION_STEPS), '--ckpt-every', String(CKPT_EVERY), '--step-time', '0', '--final', final] },
    });
    await expect(handle.result()).resolves.toMatchObject({ worldSize: 4 });
    // The restart count with its cause, so that a failure here says what restarted the job.
    const s = await status(e2e.conn, handle.workflowId);
    expect({ restarts: s.restarts, lastFailure: s.lastFailure }).toEqual({ restarts: 0, lastFailure: null });
  } finally {
    await stopAll(procs);
  }
  expect(JSON.parse(readFileSync(final, 'utf8'))).toMatchObject({ step: 60, world_size: 4 });
  expect(maxWeightDiff(final, reference)).toBeLessThan(1e-4);
});

test('kill -9 of one node: the job shrinks, resumes from the last checkpoint and finishes', async () => {
  const j = newJob('torch-kill', 200);
  const pair = [start(j, 'tkill-a', '1:2'), start(j, 'tkill-b', '1:2')];
  await waitFor('step 50 at world size 4', () => progress(j.progress).some((l) => l.step >= 50 && l.world === 4), 120_000);
  const s = await status(e2e.conn, j.job);
  const victim = pair.find((a) => a.nodeId === s.nodes.find((n) => n.groupRank === 1)!.nodeId)!;
  victim.proc.kill('SIGKILL');
  const killedAt = Date.now();
  const survivor = pair.find((a) => a !== victim)!;
  await waitFor('a step at world size 2', () => progress(j.progress).some((l) => l.world === 2), 120_000, 20);
  console.log(`pytorch e2e: kill -9 of ${victim.nodeId} → first step at world size 2 after ${((Date.now() - killedAt) / 1000).toFixed(2)} s`);
  expect(await survivor.exited).toBe(0);
  const lines = progress(j.progress);
  expect(lines.at(-1)).toEqual({ step: 200, world: 2 });
  expectResumedFromCheckpoint(lines, 2);
  const final = await status(e2e.conn, j.job);
  expect(final).toMatchObject({ state: 'succeeded', restarts: 1, lastFailure: { nodeId: victim.nodeId, rank: null } });
  // Noticed by the survivor's peer watch, not by the survivor's broken all-reduce (blamed on no one's rank).
  expect(final.lastFailure?.message).toMatch(new RegExp(`peer watch: peer ${victim.nodeId}'s agent connection closed`));
  expect(final.checkpoint?.path).toMatch(/ckpt_\d{8}\.pt$/);
});

test('a third node joins mid-training: admitted, world size grows, training continues from the checkpoint', async () => {
  const j = newJob('torch-grow', 160);
  // Training is held while the third node joins, so that it cannot finish first on a slow machine.
  const hold = path.join(j.dir, 'hold');
  const pair = [start(j, 'tgrow-a', '1:3', '--hold-while', hold), start(j, 'tgrow-b', '1:3', '--hold-while', hold)];
  await waitFor('step 45 at world size 4', () => progress(j.progress).some((l) => l.step >= 45 && l.world === 4), 120_000);
  writeFileSync(hold, '');
  const third = start(j, 'tgrow-c', '1:3', '--hold-while', hold);
  await waitForRound(e2e.conn, j.job, (s) => s.worldSize === 6 && s.state === 'running', 120_000);
  rmSync(hold);
  expect(await Promise.all([...pair, third].map((a) => a.exited))).toEqual([0, 0, 0]);
  const lines = progress(j.progress);
  expect(lines.at(-1)).toEqual({ step: 160, world: 6 });
  expectResumedFromCheckpoint(lines, 6);
  expect(await status(e2e.conn, j.job)).toMatchObject({ state: 'succeeded', restarts: 0 });
});

test('a node killed while writing a checkpoint: the partial checkpoint is skipped, the previous one is used', async () => {
  const j = newJob('torch-partial', 120);
  const stallAt = 3 * CKPT_EVERY;
  const pair = [start(j, 'tpart-a', '1:2', '--stall-in-checkpoint', String(stallAt)), start(j, 'tpart-b', '1:2', '--stall-in-checkpoint', String(stallAt))];
  const partial = path.join(j.ckpt, `ckpt_000000${stallAt}.pt`);
  await waitFor('the partial checkpoint', () => existsSync(partial), 120_000);
  const s = await status(e2e.conn, j.job);
  const writer = pair.find((a) => a.nodeId === s.nodes.find((n) => n.groupRank === 0)!.nodeId)!;
  writer.proc.kill('SIGKILL');
  const survivor = pair.find((a) => a !== writer)!;
  await waitFor('the next round', async () => (await status(e2e.conn, j.job)).worldSize === 2 && (await status(e2e.conn, j.job)).state === 'running', 60_000);
  const resumed = await status(e2e.conn, j.job);
  expect(resumed.checkpoint?.path).toBe(path.join(j.ckpt, `ckpt_000000${stallAt - CKPT_EVERY}.pt`));
  expect(await survivor.exited).toBe(0);
  const lines = progress(j.progress);
  expect(lines.at(-1)).toEqual({ step: 120, world: 2 });
  const firstAfter = lines.find((l) => l.world === 2)!;
  expect(firstAfter.step).toBe(stallAt - CKPT_EVERY + 1);
  expect(readdirSync(j.ckpt)).toContain(`ckpt_000000${stallAt}.pt`); // rewritten whole by the survivor
});

test('kill -STOP of one node: detected by heartbeat, the survivor\'s workers blocked in all-reduce are stopped, the job goes on', async () => {
  const j = newJob('torch-stop', 150);
  const pair = [start(j, 'tstop-a', '1:2'), start(j, 'tstop-b', '1:2')];
  await waitFor('step 40 at world size 4', () => progress(j.progress).some((l) => l.step >= 40 && l.world === 4), 120_000);
  const s = await status(e2e.conn, j.job);
  const frozenId = s.nodes.find((n) => n.groupRank === 1)!.nodeId;
  const frozen = pair.find((a) => a.nodeId === frozenId)!;
  const survivor = pair.find((a) => a !== frozen)!;
  const frozenPids = [frozen.proc.pid!, ...childPids(frozen.proc.pid!)];
  const survivorWorkers = childPids(survivor.proc.pid!);
  for (const pid of frozenPids) process.kill(pid, 'SIGSTOP');
  const stoppedAt = lastStep(j.progress);
  const next = await waitForRound(e2e.conn, j.job, (x) => x.worldSize === 2, 60_000);
  expect(next.lastFailure).toMatchObject({ nodeId: frozenId, rank: null });
  expect(next.lastFailure?.message).toMatch(/heartbeat/);
  // The survivor's old workers were blocked in a collective with the frozen peer; they are gone.
  for (const pid of survivorWorkers) await waitFor(`worker ${pid} stopped`, () => !alive(pid), 30_000);
  await waitFor('progress at world size 2', () => progress(j.progress).some((l) => l.world === 2 && l.step > stoppedAt - CKPT_EVERY), 60_000);
  for (const pid of frozenPids) process.kill(pid, 'SIGCONT');
  expect(await survivor.exited).toBe(0);
  expect(progress(j.progress).at(-1)?.step).toBe(150);
});

/** The agent's worker processes: its python children (not its reaper sidecar). */
function childPids(pid: number): number[] {
  const out = require('node:child_process').execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)], { encoding: 'utf8' }) as string;
  const pids = out.split('\n').filter((l) => /python/.test(l)).map((l) => Number(l.trim().split(/\s+/)[0]));
  expect(pids).toHaveLength(2);
  return pids;
}
