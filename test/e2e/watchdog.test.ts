/**
 * torch's own watchdog timers (torch.distributed.elastic.timer) with real torch, on one node × 2
 * processes: test/fixtures/watchdog_train.py, unmodified, guards its data loading with
 * `expires(after=2)` and hangs there on its first attempt. Under `telastic run` the hung rank is
 * killed, the job restarts and resumes from its checkpoint; the same script under `torchrun
 * --standalone` is the comparison. Figures (hang → workers started again, → first step) are
 * printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { describeFailure } from '../../src/job/decide';
import { testAddress } from '../setup/temporal';
import { alive as running } from '../agent/helpers';
import { FAST_RDZV, e2eSuite, startAgent, status, uniqueJobId, waitFor } from './harness';
import { CKPT_EVERY, HANG_AT, PYTHON, STEPS, TORCHRUN, secs, trainRuns } from './train-script';

const e2e = e2eSuite();
const { events, job, pids } = trainRuns();
const watchdogJob = (name: string) => job(name, ['--hang-at', String(HANG_AT), '--hang-rank', '1', '--timeout', '2']);

test('telastic run: the rank hung inside expires(after=2) is killed by its timer, the job restarts and resumes from its checkpoint', async () => {
  const j = watchdogJob('watchdog');
  const jobId = uniqueJobId('watchdog');
  const agent = startAgent(testAddress(), 'wd-a', ['--nnodes', '1', '--nproc-per-node', '2', '--max-restarts', '2', '--rdzv-id', jobId, '--checkpoint-dir', j.ckpt, ...FAST_RDZV, ...j.args], { PYTHON_EXEC: PYTHON, TORCHELASTIC_ENABLE_FILE_TIMER: '1' });
  e2e.agents.push(agent);
  const code = await Promise.race([agent.exited, new Promise((r) => setTimeout(r, 150_000).unref())]);
  expect({ code, output: code === 0 ? '' : agent.output() }).toEqual({ code: 0, output: '' });

  const evs = events(j.ev);
  const hang = evs.find((e) => e.ev === 'hang')!;
  expect(hang).toMatchObject({ rank: 1, attempt: 0, step: HANG_AT });
  const first = evs.filter((e) => e.attempt === 0 && e.ev === 'step').map((e) => e.step);
  expect(Math.max(...first.map(Number))).toBe(HANG_AT - 1); // nobody got past the hung step
  // The hung process is gone, killed by its timer (not by a shutdown: it is reported below).
  expect(running(hang.pid)).toBe(false);
  const again = evs.filter((e) => e.attempt === 1);
  const lastCkpt = Math.floor((HANG_AT - 1) / CKPT_EVERY) * CKPT_EVERY;
  expect(again.filter((e) => e.ev === 'resumed').map((e) => [e.rank, e.step, path.basename(e.path!)]).sort()).toEqual([
    [0, lastCkpt, `ckpt_${String(lastCkpt).padStart(8, '0')}.pt`],
    [1, lastCkpt, `ckpt_${String(lastCkpt).padStart(8, '0')}.pt`],
  ]);
  const steps = again.filter((e) => e.ev === 'step').map((e) => e.step);
  expect(steps[0]).toBe(lastCkpt + 1);
  expect(steps.at(-1)).toBe(STEPS);
  expect(again.filter((e) => e.ev === 'done')).toHaveLength(2);

  const s = await status(e2e.conn, jobId);
  expect(s).toMatchObject({ state: 'succeeded', restarts: 1 });
  expect(s.lastFailure).toEqual({ nodeId: 'wd-a', rank: 1, exitCode: null, signal: 'SIGKILL', message: 'watchdog timer "data" expired after 2 s' });
  expect(describeFailure(s.lastFailure!)).toBe('rank 1 on node wd-a: watchdog timer "data" expired after 2 s');
  expect(agent.output()).toContain('watchdog timer "data" expired after 2 s');

  const started = Math.min(...again.filter((e) => e.ev === 'start').map((e) => e.t));
  const stepped = again.find((e) => e.ev === 'step')!.t;
  console.log(`telastic: hang → workers started again ${secs(hang.t, started)} s, → first step after ${secs(hang.t, stepped)} s (timer 2 s)`);
}, 180_000);

test('torchrun --standalone, the same script, for comparison: its timer kills the hung rank too', async () => {
  const j = watchdogJob('watchdog-torchrun');
  const env: NodeJS.ProcessEnv = { ...process.env, TORCHELASTIC_ENABLE_FILE_TIMER: '1', TORCHELASTIC_TIMER_FILE: path.join(j.dir, 'timer') };
  for (const k of Object.keys(env)) if (k.startsWith('TELASTIC_')) delete env[k];
  const proc: ChildProcess = spawn(TORCHRUN, ['--standalone', '--nproc-per-node', '2', '--max-restarts', '2', ...j.args], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  pids.push(proc.pid!);
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const ended = new Promise<{ code: number | null; signal: string | null; t: number }>((r) => proc.on('exit', (code, signal) => r({ code, signal, t: Date.now() / 1000 })));
  try {
    const hang = await waitFor('the hang', () => events(j.ev).find((e) => e.ev === 'hang'), 120_000, 50);
    const killedAt = await waitFor('the hung rank killed', () => (running(hang.pid) ? null : Date.now() / 1000), 30_000, 20);
    expect(killedAt - hang.t).toBeGreaterThan(1.9);
    expect(killedAt - hang.t).toBeLessThan(10);
    const end = await Promise.race([ended, new Promise<null>((r) => setTimeout(() => r(null), 120_000).unref())]);
    const evs = events(j.ev);
    const again = evs.filter((e) => e.attempt === 1);
    const started = again.filter((e) => e.ev === 'start').map((e) => e.t);
    const stepped = again.find((e) => e.ev === 'step')?.t;
    const how = end === null ? 'still running after 120 s' : `torchrun exited ${end.signal ?? `with ${end.code}`} ${secs(hang.t, end.t)} s after the hang`;
    const restart = started.length ? `workers started again ${secs(hang.t, Math.min(...started))} s, first step after ${stepped ? `${secs(hang.t, stepped)} s` : 'never'}` : 'no restart';
    console.log(`torchrun: hang → hung rank killed ${secs(hang.t, killedAt)} s; ${how}; ${restart}`);
  } finally {
    try { process.kill(-proc.pid!, 'SIGKILL'); } catch { /* gone */ }
    if (out.includes('Traceback') && process.env.TELASTIC_DEBUG) console.log(out);
  }
}, 180_000);
