/**
 * Preemption (issue 10): real DDP (examples/train.py, gloo) on 2 nodes × 2 processes, --nnodes
 * 1:2, periodic checkpoints every 200 steps. A checkpoint-first drain (or SIGTERM to an agent) at
 * about step 120 has every worker checkpoint at the next step; the job goes on at world size 2
 * (the remaining node's 2 processes) from that checkpoint, and the drained agent exits 0. A script
 * that ignores the signal costs the grace and resumes from its last periodic checkpoint.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { drainNode } from '../../src/client/api';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, ROOT, WORKER, startAgent, status, tmpDir, uniqueJobId, waitFor, waitForRound, e2eSuite, type Agent } from './harness';

const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const TRAIN = path.join(ROOT, 'examples', 'train.py');
const e2e = e2eSuite();

interface Run { job: string; ckpt: string; progress: string; agents: Agent[] }

function startJob(name: string, opts: { steps: number; ckptEvery: number; extra?: string[]; rdzv?: string }): Run {
  const dir = tmpDir(name);
  const job = uniqueJobId(name);
  const ckpt = path.join(dir, 'ckpt');
  const progress = path.join(dir, 'progress.log');
  // last_call_timeout=10: the first round waits for the second agent (it forms at once when both
  // are in). With 1 s, an agent that started 4 s late made the job run at world size 2 first, and
  // the test never saw step 120 at world size 4 (a CI run timed out so).
  const args = [
    '--nnodes', '1:2', '--nproc-per-node', '2', '--rdzv-id', job, '--checkpoint-dir', ckpt,
    '--rdzv-conf', `heartbeat_timeout=3,last_call_timeout=10,prepare_timeout=3${opts.rdzv ?? ''}`, '--shutdown-timeout', '3',
    TRAIN, '--steps', String(opts.steps), '--ckpt-every', String(opts.ckptEvery), '--step-time', '0.03', '--progress', progress, ...(opts.extra ?? []),
  ];
  const agents = ['a', 'b'].map((n) => startAgent(testAddress(), `${name}-${n}`, args, { PYTHON_EXEC: PYTHON }));
  e2e.agents.push(...agents);
  return { job, ckpt, progress, agents };
}

function progress(file: string): { step: number; world: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => {
    const [step, world] = l.split(' ').map(Number);
    return { step, world };
  });
}

/** Wait for step `at` at world size 4; returns the node of group rank 1 (the one to preempt) and the other. */
async function atStep(r: Run, at: number): Promise<{ victim: Agent; survivor: Agent }> {
  await waitFor(`step ${at} at world size 4`, () => progress(r.progress).some((l) => l.step >= at && l.world === 4), 120_000, 50);
  const s = await status(e2e.conn, r.job);
  const victim = r.agents.find((a) => a.nodeId === s.nodes.find((n) => n.groupRank === 1)!.nodeId)!;
  return { victim, survivor: r.agents.find((a) => a !== victim)! };
}

/** Where the job resumed at world size 2, and how many steps it redid from where it was stopped. */
function resumed(file: string): { lastBefore: number; resumedAt: number; redone: number } {
  const lines = progress(file);
  const first = lines.findIndex((l) => l.world === 2);
  expect(first).toBeGreaterThan(0);
  const lastBefore = Math.max(...lines.slice(0, first).map((l) => l.step));
  const resumedAt = lines[first].step - 1;
  return { lastBefore, resumedAt, redone: lastBefore - resumedAt };
}

/**
 * The checkpoint the drain recorded: one written for the request (after it, not a periodic one),
 * and no newer than the one the job resumed from. It may be older: a node's workers signalled a
 * moment after the others' (group by group) can ask for a second checkpoint, a few steps on,
 * before the round ends, and the job resumes from that newest one.
 */
function expectAsked(ckpt: { path: string; step: number | null } | null | undefined, r: { ckpt: string }, requestedAt: number, resumedAt: number): void {
  expect(ckpt?.step).toBeGreaterThanOrEqual(requestedAt);
  expect(ckpt!.step).toBeLessThanOrEqual(resumedAt);
  expect(ckpt!.step! % 200).not.toBe(0);
  expect(ckpt!.path).toBe(path.join(r.ckpt, `ckpt_${String(ckpt!.step).padStart(8, '0')}.pt`));
}

test('drain --checkpoint-first at about step 120: every rank checkpoints, the job resumes at world size 2 from it, the drained agent exits 0', async () => {
  const r = startJob('pre-drain', { steps: 180, ckptEvery: 200 });
  const { victim, survivor } = await atStep(r, 120);
  const requestedAt = progress(r.progress).at(-1)!.step;
  expect(await drainNode({ connection: e2e.conn }, r.job, victim.nodeId, undefined, { checkpointFirst: true, graceMs: 20_000 })).toBe('applied');
  expect(await victim.exited).toBe(0);
  expect(await survivor.exited).toBe(0);
  const { resumedAt, redone } = resumed(r.progress);
  expect(resumedAt).toBeGreaterThanOrEqual(requestedAt); // a checkpoint at least as new as the request
  expect(resumedAt % 200).not.toBe(0); // the one asked for, not a periodic one
  console.log(`drain --checkpoint-first: requested at step ${requestedAt}, checkpoint at ${resumedAt}, ${redone} step(s) redone`);
  expect(redone).toBeLessThanOrEqual(40);
  const s = await status(e2e.conn, r.job);
  expect(s).toMatchObject({ state: 'succeeded', restarts: 0, worldSize: 2 });
  expect(s.preemptions).toEqual([expect.objectContaining({ nodeId: victim.nodeId })]);
  expectAsked(s.preemptions![0].checkpoint, r, requestedAt, resumedAt);
  expect(s.preemptions![0].tookMs).toBeLessThan(20_000);
  expect(progress(r.progress).at(-1)).toEqual({ step: 180, world: 2 });
});

test('SIGTERM to an agent (a preemption notice): the same, within --leave-grace; rounds in group workflows (group_size=1)', async () => {
  const r = startJob('pre-term', { steps: 180, ckptEvery: 200, rdzv: ',group_size=1' });
  const { victim, survivor } = await atStep(r, 120);
  const requestedAt = progress(r.progress).at(-1)!.step;
  victim.proc.kill('SIGTERM');
  expect(await victim.exited).toBe(0);
  expect(victim.output()).toMatch(/SIGTERM: node .* leaves job .* after a checkpoint \(grace 25s\)/);
  expect(await survivor.exited).toBe(0);
  const { resumedAt, redone } = resumed(r.progress);
  expect(resumedAt).toBeGreaterThanOrEqual(requestedAt);
  console.log(`SIGTERM: requested at step ${requestedAt}, checkpoint at ${resumedAt}, ${redone} step(s) redone`);
  expect(redone).toBeLessThanOrEqual(40);
  const s = await status(e2e.conn, r.job);
  expect(s).toMatchObject({ state: 'succeeded', restarts: 0 });
  expect(s.preemptions).toEqual([expect.objectContaining({ nodeId: victim.nodeId, graceMs: 25_000 })]);
  expectAsked(s.preemptions![0].checkpoint, r, requestedAt, resumedAt);
});

test('a script that ignores the signal: the drain completes after the grace and resumes from the last periodic checkpoint', async () => {
  // Slower steps: the 2 s grace ends long before the next periodic checkpoint (step 200, the end).
  const r = startJob('pre-ignore', { steps: 200, ckptEvery: 100, extra: ['--ignore-checkpoint-signal', '--step-time', '0.05'] });
  const { victim, survivor } = await atStep(r, 110);
  const t0 = Date.now();
  await drainNode({ connection: e2e.conn }, r.job, victim.nodeId, undefined, { checkpointFirst: true, graceMs: 2000 });
  expect(await victim.exited).toBe(0);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(2000);
  expect(await survivor.exited).toBe(0);
  const { resumedAt, redone } = resumed(r.progress);
  expect(resumedAt).toBe(100);
  console.log(`ignored signal: resumed from the periodic checkpoint at ${resumedAt}, ${redone} step(s) redone`);
  const s = await status(e2e.conn, r.job);
  expect(s.preemptions).toEqual([expect.objectContaining({ nodeId: victim.nodeId, checkpoint: null, graceMs: 2000 })]);
  expect(s.preemptions![0].tookMs).toBeGreaterThanOrEqual(2000);
});

test('a second SIGTERM leaves at once (exit 143), whatever the grace; a worker without a handler is not signalled', async () => {
  // test/fixtures/worker.py installs no SIGUSR1 handler: it would die of the signal, so it gets none.
  const dir = tmpDir('pre-twice');
  const job = uniqueJobId('pre-twice');
  const args = ['--nnodes', '1:2', '--rdzv-id', job, '--checkpoint-dir', path.join(dir, 'ckpt'), ...FAST_RDZV, WORKER, '--out', dir];
  const [a, b] = ['twice-a', 'twice-b'].map((n) => startAgent(testAddress(), n, args));
  e2e.agents.push(a, b);
  await waitForRound(e2e.conn, job, (s) => s.state === 'running' && s.worldSize === 2);
  b.proc.kill('SIGTERM');
  await waitFor('the checkpoint-first drain', async () => (await status(e2e.conn, job)).preempting?.length === 1);
  const t0 = Date.now();
  b.proc.kill('SIGTERM');
  expect(await b.exited).toBe(143);
  expect(Date.now() - t0).toBeLessThan(10_000); // not the 25 s grace
  await waitForRound(e2e.conn, job, (s) => s.state === 'running' && s.worldSize === 1).catch(async (err) => {
    console.log(JSON.stringify(await status(e2e.conn, job)), a.output().slice(-3000), b.output().slice(-3000));
    throw err;
  });
  const s = await status(e2e.conn, job);
  expect(s.preemptions).toEqual([expect.objectContaining({ nodeId: 'twice-b', checkpoint: null })]);
  expect(s.restarts).toBe(0); // the worker without a handler was not killed by the signal
  a.proc.kill('SIGINT');
  await a.exited;
});
