/**
 * A checkpoint-first drain of a pool job: two `telastic agent`s with `--checkpoint-signal SIGUSR2`
 * serve a 1:2 job of stand-in workers (test/fixtures/worker.py) that take a step every 50 ms and
 * checkpoint at the next step after SIGUSR2 (and never otherwise: without it the job would start
 * over from step 1). `telastic drain --checkpoint-first`
 * of one node: every worker gets SIGUSR2, the job resumes on the other node from that checkpoint
 * (no restart counted), and the drained node goes back to the pool free, never to this job again.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { submitJob } from '../../src/client/pool';
import { testAddress } from '../setup/temporal';
import { BIN, WORKER, alive, e2eSuite, finish, owners, poolState, recordedEnvs, recordedPids, status, testPool, tmpDir, uniqueJobId, waitFor, waitForRound } from './harness';

const e2e = e2eSuite();

function progress(out: string): { step: number; world: number }[] {
  const file = path.join(out, 'progress.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => {
    const [step, world] = l.split(' ').map(Number);
    return { step, world };
  });
}

/** Signals the workers recorded, keyed `round.node.rank`. */
function signals(out: string): Record<string, string> {
  return Object.fromEntries(readdirSync(out).filter((f) => f.startsWith('signal.')).map((f) => [f.slice('signal.'.length), readFileSync(path.join(out, f), 'utf8')]));
}

test('drain --checkpoint-first of a pool job: workers get the agents\' --checkpoint-signal, the job resumes from that checkpoint on the other node with no restart, and the drained node is free in the pool', async () => {
  const dir = tmpDir('pool-preempt');
  const out = path.join(dir, 'out');
  const ckpt = path.join(dir, 'ckpt');
  const pool = testPool('pool-preempt', e2e.agents, [path.dirname(WORKER), dir]);
  pool.controller();
  const agents = ['pre-n1', 'pre-n2'].map((n) => pool.agent(n, ['--nproc', '1', '--checkpoint-signal', 'SIGUSR2']));
  await waitFor('2 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 2);

  const job = uniqueJobId('pool-preempt-job');
  await submitJob({ connection: e2e.conn, taskQueue: pool.taskQueue }, {
    jobId: job, pool: pool.name, minNodes: 1, maxNodes: 2, nprocPerNode: 1, maxRestarts: 3, checkpointDir: ckpt,
    entrypoint: { script: WORKER, args: ['--out', out, '--step-time', '0.05', '--checkpoint-signal', 'SIGUSR2'] },
    rdzv: { heartbeatTimeoutMs: 3000, lastCallTimeoutMs: 1000, joinTimeoutMs: 60_000, prepareTimeoutMs: 3000 }, shutdownTimeoutMs: 3000,
  });
  const before = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  // Both workers run with their handler installed (before they write their pid): a worker that
  // does not catch the signal is not sent it.
  await waitFor('both workers stepping', () => recordedPids(out, before.round).length === 2 && progress(out).some((l) => l.step >= 5), 30_000, 50);
  const victim = before.nodes.find((n) => n.groupRank === 1)!.nodeId;
  const survivor = before.nodes.find((n) => n.groupRank === 0)!.nodeId;
  const asked = progress(out).at(-1)!.step; // the CLI is started here; it needs a second or two

  const r = await promisify(execFile)(process.execPath, [BIN, 'drain', job, victim, '--checkpoint-first', '--grace', '20s', '--address', testAddress()]);
  expect(r.stdout.trim()).toBe(`job ${job}: draining ${victim} after a checkpoint (grace 20s)`);
  const after = await waitForRound(e2e.conn, job, (s) => s.round > before.round && s.worldSize === 1);
  expect(Object.fromEntries(after.nodes.map((n) => [n.nodeId, n.state]))).toEqual({ [survivor]: 'running', [victim]: 'drained' });
  expect(after.restarts).toBe(0); // a drain is a membership change, not a failure

  // Every worker of the drained round, on both nodes, got SIGUSR2 (not the default SIGUSR1,
  // which the script does not handle: it would not have been sent at all).
  expect(signals(out)).toEqual({ [`${before.round}.${survivor}.0`]: 'SIGUSR2', [`${before.round}.${victim}.1`]: 'SIGUSR2' });
  const [p] = after.preemptions ?? [];
  expect(p).toMatchObject({ nodeId: victim, graceMs: 20_000, checkpoint: { path: expect.stringMatching(/ckpt_\d{8}\.state$/), step: expect.any(Number) } });
  const taken = JSON.parse(readFileSync(p.checkpoint!.path, 'utf8')) as { step: number; why: string };
  expect(taken).toEqual({ step: p.checkpoint!.step, why: 'SIGUSR2' });
  expect(taken.step).toBeGreaterThan(asked);
  expect(p.tookMs).toBeLessThan(20_000);
  // The new round resumes from it: its worker is handed the checkpoint and steps on from there.
  const env = await waitFor('the new round\'s worker', () => recordedEnvs(out).get(`${after.round}.${survivor}.0`));
  expect(env.TELASTIC_RESUME_FROM).toBe(p.checkpoint!.path);
  await waitFor('a step at world size 1', () => progress(out).some((l) => l.world === 1), 30_000, 50);
  const lines = progress(out);
  const first = lines.findIndex((l) => l.world === 1);
  expect(lines[first].step).toBe(taken.step + 1);
  const redone = Math.max(...lines.slice(0, first).map((l) => l.step)) - taken.step;
  console.log(`pool drain --checkpoint-first: CLI started at step ${asked}, checkpoint at ${taken.step} ${p.tookMs} ms after the job took the request, ${redone} step(s) redone`);
  await waitFor('the drained round\'s workers stopped', () => recordedPids(out, before.round).filter(alive).length === 0, 15_000);

  // The drained node is back in the pool, free, and its agent runs on; the job, below its
  // maximum of 2, is never granted it again (README: a node never qualifies for a job that drained it).
  const ps = await waitFor('the drained node back in the pool', async () => {
    const x = await poolState(e2e.conn, pool.name);
    return owners(x)[victim] !== job ? x : null;
  }, 15_000);
  expect(owners(ps)).toEqual({ [survivor]: job, [victim]: 'free' });
  expect(ps.jobs.find((j) => j.jobId === job)?.excluded).toEqual([victim]);
  for (const a of agents) expect(a.proc.exitCode).toBeNull();

  finish(out);
  await waitFor('the job succeeded', async () => (await status(e2e.conn, job)).state === 'succeeded');
  expect((await status(e2e.conn, job)).restarts).toBe(0);
  await waitFor('2 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 2);
});
