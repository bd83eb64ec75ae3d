/**
 * telastic vs torchrun, side by side, on the same PyTorch script (examples/train.py, CPU, gloo):
 * two agents on 127.0.0.1 × 2 processes, `--nnodes 1:2 --max-restarts 3 --monitor-interval 0.1`,
 * last_call_timeout=5 s for both, a checkpoint every 20 steps, fresh checkpoint dirs per run.
 *   throughput   steps/s from step 20 to step 120 (--step-time 0), from rank 0's progress times
 *   kill -9      the second-started node (agent + all its descendants) → first step after it
 *   kill -STOP   the same node frozen → first step after it (capped: --stop-cap, default 180 s)
 *   cold start   both agents launched → first step (telastic's Temporal dev server already up)
 * torchrun uses its c10d rendezvous; the first agent hosts the TCPStore (is_host=true), so the
 * node taken away is always the second one, under both launchers.
 * Usage: node lib/bench/vs-torchrun.js [--runs 3] [--stop-cap 180]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../src/temporal/dev-server';
import { freePort } from '../src/temporal/ports';
import { ROOT, median, startAgent, waitFor, type Agent } from './agents';
import { VENV, killNode, processTree, progressLines, signalAll, startTorchrun, versions, type Line } from './torchrun-agents';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt('--runs', '3'));
const CAP_S = Number(opt('--stop-cap', '180'));
const TRAIN = path.join(ROOT, 'examples', 'train.py');
const LAST_CALL_S = 5;
const CKPT_EVERY = 20;
const WINDOW = [20, 120] as const;

type Launcher = 'telastic' | 'torchrun';
interface Job { launcher: Launcher; dir: string; agents: Agent[]; progress: string; t0: number }

let temporalAddress = '';
const live = new Set<Agent>(); // every agent not yet killed, for the clean-up on errors
const frozen: number[] = []; // SIGSTOPped pids, resumed and killed at the end whatever happens
const notes: string[] = [];
const victims: string[] = []; // the group rank the node taken away had, per run
let current: Job | undefined; // the job last launched, whose agents' output an error shows

/** Start both agents of a fresh job; t0 is the launch time in seconds (unix, like the progress lines). */
async function launch(launcher: Launcher, what: string, train: string[]): Promise<Job> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `vs-torchrun-${launcher}-${what}-`));
  const ckpt = path.join(dir, 'ckpt');
  const progress = path.join(dir, 'progress.log');
  const id = `vs-${launcher}-${what}-${Date.now()}`;
  const common = ['--nnodes', '1:2', '--nproc-per-node', '2', '--max-restarts', '3', '--monitor-interval', '0.1', '--rdzv-id', id];
  const script = [TRAIN, ...train, '--ckpt-every', String(CKPT_EVERY), '--progress', progress];
  const port = launcher === 'torchrun' ? await freePort() : 0;
  const t0 = Date.now() / 1000;
  const agents = [0, 1].map((i) =>
    launcher === 'telastic'
      ? startAgent(temporalAddress, `${id}-${i}`, [...common, '--rdzv-conf', `last_call_timeout=${LAST_CALL_S}`, '--checkpoint-dir', ckpt, ...script], { PYTHON_EXEC: path.join(VENV, 'python') })
      : startTorchrun(`${id}-${i}`, [...common, '--rdzv-backend', 'c10d', '--rdzv-endpoint', `127.0.0.1:${port}`, '--rdzv-conf', `last_call_timeout=${LAST_CALL_S},is_host=${i === 0}`, ...script, '--ckpt-dir', ckpt]),
  );
  for (const a of agents) live.add(a);
  return (current = { launcher, dir, agents, progress, t0 });
}

/** Kill both nodes whole; their output stays in the job's directory (agent-0.log, agent-1.log). */
async function stop(job: Job): Promise<void> {
  for (const [i, a] of job.agents.entries()) {
    await killNode(a, frozen.splice(0));
    live.delete(a);
    writeFileSync(path.join(job.dir, `agent-${i}.log`), a.output());
  }
}

/** Wait for a progress line matching `pred`; null after `timeoutS`. */
function line(job: Job, what: string, pred: (l: Line, all: Line[]) => boolean, timeoutS: number): Promise<Line | null> {
  return waitFor(`${job.launcher}: ${what}`, () => progressLines(job.progress).find((l, _, all) => pred(l, all)), timeoutS * 1000, 20).catch(() => null);
}

/** Metrics 1 and 4: launch → first step; steps/s over WINDOW. */
async function steady(launcher: Launcher): Promise<{ cold: number; sps: number }> {
  const job = await launch(launcher, 'steady', ['--steps', '100000', '--step-time', '0']);
  try {
    if (!(await line(job, `step ${WINDOW[1]}`, (l) => l.step >= WINDOW[1], CAP_S))) throw new Error(`${launcher}: no step ${WINDOW[1]} in ${CAP_S} s`);
    const lines = progressLines(job.progress);
    const at = (step: number) => lines.filter((l) => l.step === step).at(-1)!;
    if (lines.some((l) => l.step <= WINDOW[1] && l.world !== 4)) notes.push(`${launcher} steady run: world size was not 4 throughout steps 1-${WINDOW[1]} (${[...new Set(lines.map((l) => l.world))].join(', ')})`);
    return { cold: lines[0].t - job.t0, sps: (WINDOW[1] - WINDOW[0]) / (at(WINDOW[1]).t - at(WINDOW[0]).t) };
  } finally {
    await stop(job);
  }
}

/** Metrics 2 and 3: the second node's agent and its workers SIGKILLed or SIGSTOPped → first step after it. */
async function loss(launcher: Launcher, sig: 'SIGKILL' | 'SIGSTOP'): Promise<number> {
  const job = await launch(launcher, sig, ['--steps', '100000', '--step-time', '0.02']);
  try {
    if (!(await line(job, 'step 30 at world size 4', (l) => l.world === 4 && l.step >= 30, CAP_S))) throw new Error(`${launcher}: no step 30 at world size 4`);
    const node = processTree(job.agents[1].proc.pid!);
    if (node.length < 3) throw new Error(`${launcher}: the second node has ${node.length - 1} descendants, expected 2 workers`);
    const t0 = Date.now() / 1000;
    if (sig === 'SIGSTOP') frozen.push(...node);
    signalAll(node, sig);
    const after = await line(job, 'the first step after recovery', (l) => l.t > t0 && l.world === 2, CAP_S);
    const rank = /group_?[rR]ank"?[=:](\d+)/.exec(job.agents[1].output())?.[1] ?? '?';
    victims.push(`${launcher} ${sig === 'SIGKILL' ? 'kill -9' : 'kill -STOP'}: ${rank}`);
    if (!after) notes.push(`${launcher} ${sig}: no step at world size 2 within ${CAP_S} s; agent logs in ${job.dir}`);
    return after ? after.t - t0 : Infinity;
  } finally {
    await stop(job);
  }
}

const fmt = (x: number, unit: string, digits = 2) => (Number.isFinite(x) ? `${x.toFixed(digits)}${unit}` : `> ${CAP_S} s`);

function ratio(a: number, b: number): string {
  if (Number.isFinite(a) && Number.isFinite(b)) return `${(a / b).toFixed(2)}×`;
  if (Number.isFinite(a)) return `< ${(a / CAP_S).toFixed(3)}×`;
  return Number.isFinite(b) ? `> ${(CAP_S / b).toFixed(1)}×` : 'n/a';
}

async function main(): Promise<void> {
  const server = await startDevServer({ headless: true, port: 0 });
  temporalAddress = server.address;
  const both: Launcher[] = ['telastic', 'torchrun'];
  const rows: { metric: string; unit: string; digits: number; v: Record<Launcher, number[]> }[] = [
    { metric: `throughput, steps ${WINDOW[0]}→${WINDOW[1]} (steps/s)`, unit: '', digits: 1, v: { telastic: [], torchrun: [] } },
    { metric: 'kill -9 node → first step after', unit: ' s', digits: 2, v: { telastic: [], torchrun: [] } },
    { metric: 'kill -STOP node → first step after', unit: ' s', digits: 2, v: { telastic: [], torchrun: [] } },
    { metric: 'cold start → first step', unit: ' s', digits: 2, v: { telastic: [], torchrun: [] } },
  ];
  const started = Date.now();
  try {
    for (let i = 0; i < RUNS; i++) {
      for (const l of both) {
        const s = await steady(l);
        rows[0].v[l].push(s.sps);
        rows[3].v[l].push(s.cold);
        console.error(`run ${i + 1} ${l}: cold ${s.cold.toFixed(2)} s, ${s.sps.toFixed(1)} steps/s (${current?.dir})`);
      }
    }
    for (const [row, sig] of [[1, 'SIGKILL'], [2, 'SIGSTOP']] as const) {
      for (let i = 0; i < RUNS; i++) {
        for (const l of both) {
          rows[row].v[l].push(await loss(l, sig));
          console.error(`run ${i + 1} ${l} ${sig}: ${fmt(rows[row].v[l].at(-1)!, ' s')} (${current?.dir})`);
        }
      }
    }
  } finally {
    for (const a of [...live]) await killNode(a, frozen.splice(0));
    await server.stop();
  }
  const cpus = os.cpus();
  const v = versions();
  console.log(`telastic vs torchrun — examples/train.py (CPU, gloo), 2 agents on 127.0.0.1 × 2 processes, --nnodes 1:2, ${RUNS} runs each, medians`);
  console.log(`machine: ${cpus[0]?.model} × ${cpus.length}, ${os.type()} ${os.release()}; node ${process.version}; torch ${v.torch}; ${v.temporal}`);
  console.log(`both: last_call_timeout=${LAST_CALL_S} s, --max-restarts 3, --monitor-interval 0.1, checkpoint every ${CKPT_EVERY} steps; telastic heartbeat_timeout=10 s, prepare_timeout=5 s (defaults),`);
  console.log(`  one Temporal dev server started before (not in cold start); torchrun --rdzv-backend c10d, TCPStore on the first agent.`);
  console.log(`recovery runs: --step-time 0.02, fault after step 30 at world size 4 on the second-started node; "first step after" = first progress line written after the signal at world size 2.`);
  console.log(`node loss = the signal sent to the second agent AND all its descendants (workers) under both launchers: torchrun workers run in their own sessions and would survive a kill -9 of their agent alone.`);
  console.log('');
  const table = [['metric', 'telastic', 'torchrun', 'telastic/torchrun', 'telastic runs', 'torchrun runs']];
  for (const r of rows) {
    const [t, p] = [median(r.v.telastic), median(r.v.torchrun)];
    const runs = (xs: number[]) => xs.map((x) => (Number.isFinite(x) ? x.toFixed(r.digits) : `>${CAP_S}`)).join(' ');
    table.push([r.metric, fmt(t, r.unit, r.digits), fmt(p, r.unit, r.digits), ratio(t, p), runs(r.v.telastic), runs(r.v.torchrun)]);
  }
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd());
  const ranks = (l: Launcher, what: string) => victims.filter((v) => v.startsWith(`${l} ${what}:`)).map((v) => v.split(': ')[1]).join(' ');
  for (const l of both) console.log(`${l}: group rank of the node taken away, per run: kill -9 ${ranks(l, 'kill -9')}; kill -STOP ${ranks(l, 'kill -STOP')}`);
  for (const n of notes) console.log(`note: ${n}`);
  console.log(`\nbench time ${((Date.now() - started) / 60000).toFixed(1)} min; train.py processes left: ${leftovers() || 'none'}`);
}

function leftovers(): string {
  try {
    return execFileSync('pgrep', ['-f', 'train.py'], { encoding: 'utf8' }).trim().split('\n').join(' ');
  } catch {
    return ''; // pgrep exits 1 when nothing matches
  }
}

process.on('SIGINT', () => {
  for (const a of live) signalAll([...processTree(a.proc.pid!), ...frozen], 'SIGKILL');
  process.exit(130);
});

main().catch((err) => {
  console.error(err);
  for (const a of current?.agents ?? []) console.error(`--- ${a.nodeId}\n${a.output().slice(-3000)}`);
  process.exitCode = 1;
});
