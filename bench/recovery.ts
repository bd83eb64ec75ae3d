/**
 * telastic's own recovery figures (issue: core), printed, not asserted:
 *   cold start   `telastic run --standalone` (embedded Temporal) → all workers running
 *   kill -9      one node's agent killed → workers running again on the rest
 *   kill -STOP   one node's agent and workers frozen → workers running again on the rest
 * Workload: test/fixtures/worker.py (no collectives, so a lost node is noticed only through the
 * heartbeat timeout; see bench/vs-torchrun.ts for real PyTorch). Default timings unless
 * --rdzv-conf is given. Usage: node lib/bench/recovery.js [--runs 3] [--rdzv-conf k=v,…]
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../src/temporal/dev-server';
import { ROOT, alive, median, startAgent, stopAll, waitFor, type Agent } from './agents';

const WORKER = path.join(ROOT, 'test', 'fixtures', 'worker.py');
const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt('--runs', '3'));
const CONF = opt('--rdzv-conf', 'last_call_timeout=30');

const tmp = (p: string) => mkdtempSync(path.join(os.tmpdir(), `telastic-bench-${p}-`));
const pidsOf = (out: string, round: number) => (existsSync(out) ? readdirSync(out).filter((f) => f.startsWith(`pid.${round}.`)) : []);
const finishFile = (out: string) => require('node:fs').writeFileSync(path.join(out, 'finish'), '');

async function coldStart(): Promise<number> {
  const out = tmp('cold');
  const t0 = Date.now();
  const a = startAgent('', `cold-${t0}`, ['--standalone', '--nproc-per-node', '2', WORKER, '--out', out]);
  await waitFor('2 workers', () => pidsOf(out, 1).length === 2, 120_000, 20);
  const ms = Date.now() - t0;
  finishFile(out);
  await a.exited;
  return ms;
}

async function loss(address: string, how: 'SIGKILL' | 'SIGSTOP'): Promise<number> {
  const out = tmp('loss');
  const job = `bench-${how}-${Date.now()}`;
  const args = ['--nnodes', '1:2', '--nproc-per-node', '2', '--max-restarts', '3', '--rdzv-id', job, '--rdzv-conf', CONF, WORKER, '--out', out];
  const agents: Agent[] = [startAgent(address, `${job}-a`, args), startAgent(address, `${job}-b`, args)];
  try {
    await waitFor('4 workers', () => pidsOf(out, 1).length === 4, 120_000, 20);
    const victim = agents[1];
    const frozen = [victim.proc.pid!, ...pidsOf(out, 1).filter((f) => f.includes(`.${victim.nodeId}.`)).map((f) => Number(require('node:fs').readFileSync(path.join(out, f), 'utf8')))];
    const t0 = Date.now();
    if (how === 'SIGKILL') victim.proc.kill('SIGKILL');
    else for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    await waitFor('workers again', () => readdirSync(out).some((f) => /^pid\.([2-9]|\d\d)\./.test(f)), 180_000, 20);
    const ms = Date.now() - t0;
    for (const pid of frozen) if (alive(pid)) process.kill(pid, 'SIGCONT');
    finishFile(out);
    return ms;
  } finally {
    await stopAll(agents);
  }
}

async function main(): Promise<void> {
  const rows: [string, number[]][] = [['cold start, --standalone → all workers running', []]];
  for (let i = 0; i < RUNS; i++) rows[0][1].push(await coldStart());
  const server = await startDevServer({ headless: true, port: 0 });
  try {
    rows.push(['kill -9 of a node → workers running on the rest', []], ['kill -STOP of a node → workers running on the rest', []]);
    for (let i = 0; i < RUNS; i++) rows[1][1].push(await loss(server.address, 'SIGKILL'));
    for (let i = 0; i < RUNS; i++) rows[2][1].push(await loss(server.address, 'SIGSTOP'));
  } finally {
    await server.stop();
  }
  console.log(`telastic recovery (${RUNS} runs each, --rdzv-conf ${CONF}, ${os.cpus().length} cores, node ${process.version})`);
  for (const [what, xs] of rows) console.log(`${what.padEnd(52)} median ${(median(xs) / 1000).toFixed(2)} s   runs ${xs.map((x) => (x / 1000).toFixed(2)).join(' ')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
