/**
 * Steps redone on a preemption notice, telastic vs torchrun, on the same script
 * (examples/train.py, CPU, gloo): two agents on 127.0.0.1 × 2 processes, --nnodes 1:2, a periodic
 * checkpoint every --ckpt-every steps (default 50), --step-time 0.02. At a step spread evenly
 * over a checkpoint interval (run i of N: 50k + (i + ½)·50/N), the second agent gets SIGTERM, as
 * Kubernetes sends it to a pod's main process:
 *   telastic  asks the job for a checkpoint first (every worker gets SIGUSR1, saves at the next
 *             step), then leaves (--leave-grace 25 s); the job resumes at world size 2.
 *   torchrun  forwards SIGTERM to its workers and exits; the other agent's workers fail in their
 *             collective, it restarts them (--max-restarts 3) at world size 2 from the last
 *             periodic checkpoint.
 * "Steps redone" = the last step done at world size 4 − the step the job resumed from.
 * A job that does not resume within --cap seconds (default 120) counts the steps it would redo
 * (from the newest checkpoint) and is marked `>cap` in the time column.
 * Usage: node lib/bench/preempt.js [--runs 3] [--ckpt-every 50] [--cap 120]
 */
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../src/temporal/dev-server';
import { freePort } from '../src/temporal/ports';
import { ROOT, median, startAgent, waitFor, type Agent } from './agents';
import { VENV, killNode, progressLines, startTorchrun, versions } from './torchrun-agents';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt('--runs', '3'));
const CKPT_EVERY = Number(opt('--ckpt-every', '50'));
const TRAIN = path.join(ROOT, 'examples', 'train.py');
const CAP_S = Number(opt('--cap', '120'));

type Launcher = 'telastic' | 'torchrun';
/** `seconds` is Infinity when the job did not resume within CAP_S; `resumedFrom` is then the newest checkpoint it would resume from. */
interface Result { noticeStep: number; lastBefore: number; resumedFrom: number; redone: number; seconds: number }

/** The step of the newest ckpt_<step>.pt in `dir` (what examples/train.py resumes from under torchrun). */
function newestCheckpointStep(dir: string): number {
  const steps = (existsSync(dir) ? readdirSync(dir) : []).map((f) => /^ckpt_(\d+)\.pt$/.exec(f)?.[1]).filter((x): x is string => !!x).map(Number);
  return steps.length ? Math.max(...steps) : 0;
}

let temporalAddress = '';
const live = new Set<Agent>();

async function once(launcher: Launcher, noticeAt: number): Promise<Result> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `preempt-${launcher}-`));
  const ckpt = path.join(dir, 'ckpt');
  const progress = path.join(dir, 'progress.log');
  const id = `preempt-${launcher}-${Date.now()}`;
  const common = ['--nnodes', '1:2', '--nproc-per-node', '2', '--max-restarts', '3', '--monitor-interval', '0.1', '--rdzv-id', id];
  const script = [TRAIN, '--steps', '100000', '--step-time', '0.02', '--ckpt-every', String(CKPT_EVERY), '--progress', progress];
  const port = launcher === 'torchrun' ? await freePort() : 0;
  const agents = [0, 1].map((i) =>
    launcher === 'telastic'
      ? startAgent(temporalAddress, `${id}-${i}`, [...common, '--rdzv-conf', 'last_call_timeout=5', '--checkpoint-dir', ckpt, ...script], { PYTHON_EXEC: path.join(VENV, 'python') })
      : startTorchrun(`${id}-${i}`, [...common, '--rdzv-backend', 'c10d', '--rdzv-endpoint', `127.0.0.1:${port}`, '--rdzv-conf', `last_call_timeout=5,is_host=${i === 0}`, ...script, '--ckpt-dir', ckpt]),
  );
  for (const a of agents) live.add(a);
  try {
    await waitFor(`${launcher}: step ${noticeAt} at world size 4`, () => progressLines(progress).some((l) => l.world === 4 && l.step >= noticeAt), CAP_S * 1000, 10);
    const noticeStep = progressLines(progress).at(-1)!.step;
    const t0 = Date.now() / 1000;
    agents[1].proc.kill('SIGTERM');
    const after = await waitFor(`${launcher}: a step at world size 2`, () => progressLines(progress).find((l) => l.world === 2), CAP_S * 1000, 20).catch(() => null);
    const lines = progressLines(progress);
    const lastBefore = Math.max(...lines.filter((l) => l.world === 4).map((l) => l.step));
    const resumedFrom = after ? after.step - 1 : newestCheckpointStep(ckpt);
    return { noticeStep, lastBefore, resumedFrom, redone: lastBefore - resumedFrom, seconds: after ? after.t - t0 : Infinity };
  } finally {
    for (const [i, a] of agents.entries()) {
      await killNode(a);
      live.delete(a);
      writeFileSync(path.join(dir, `agent-${i}.log`), a.output());
    }
  }
}

const fmt = (s: number) => (Number.isFinite(s) ? `${s.toFixed(1)} s` : `>${CAP_S} s`);

async function main(): Promise<void> {
  const server = await startDevServer({ headless: true, port: 0 });
  temporalAddress = server.address;
  const results: Record<Launcher, Result[]> = { telastic: [], torchrun: [] };
  const started = Date.now();
  try {
    for (let i = 0; i < RUNS; i++) {
      const noticeAt = CKPT_EVERY + Math.round(((i + 0.5) * CKPT_EVERY) / RUNS);
      for (const l of ['telastic', 'torchrun'] as const) {
        const r = await once(l, noticeAt);
        results[l].push(r);
        const resumed = Number.isFinite(r.seconds) ? `resumed from ${r.resumedFrom}` : `NOT resumed within ${CAP_S} s (newest checkpoint ${r.resumedFrom})`;
        console.error(`run ${i + 1} ${l}: SIGTERM at step ${r.noticeStep}, last step at world 4 ${r.lastBefore}, ${resumed}: ${r.redone} redone, ${fmt(r.seconds)} to the first step at world 2`);
      }
    }
  } finally {
    for (const a of [...live]) await killNode(a);
    await server.stop();
  }
  const v = versions();
  console.log(`steps redone on a preemption notice (SIGTERM to the second agent), examples/train.py (CPU, gloo), 2 agents × 2 processes, --nnodes 1:2,`);
  console.log(`checkpoint every ${CKPT_EVERY} steps, --step-time 0.02, notice spread over a checkpoint interval, ${RUNS} runs each, medians; ${os.cpus().length} CPUs, torch ${v.torch}`);
  for (const l of ['telastic', 'torchrun'] as const) {
    const rs = results[l];
    console.log(`${l.padEnd(9)} steps redone ${String(median(rs.map((r) => r.redone))).padStart(4)} (runs: ${rs.map((r) => r.redone).join(' ')}); notice → first step at world size 2: ${fmt(median(rs.map((r) => r.seconds)))} (runs: ${rs.map((r) => fmt(r.seconds)).join(' ')})`);
  }
  console.log(`bench time ${((Date.now() - started) / 60000).toFixed(1)} min`);
}

process.on('SIGINT', () => {
  void Promise.all([...live].map((a) => killNode(a))).then(() => process.exit(130));
});

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
