/**
 * Scale with real agents (issue 6, Deliver 4a), printed, not asserted: N `telastic run` processes
 * (stand-in workers: test/fixtures/worker.py) against a headless dev server started here, one job
 * `--nnodes N-1:N`, every agent a coordinator (as a new user runs them).
 *   start      all N agents launched at once → every worker wrote its pid file (one round of N)
 *   kill -9    of one agent → the other N-1 running again in a later round
 *   RSS        VmRSS of each `telastic run` process (and of its reaper sidecar), of the server
 * Everything started here is killed at the end, also on failure. Loopback only.
 * With --no-coordinator the agents host no job workflows and one `telastic controller` does.
 * Usage: node lib/bench/scale-agents.js [--nodes 64] [--min N-1] [--group-size 64] [--no-coordinator] [--timeout 300]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { getJobStatus } from '../src/client/api';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { BIN, ROOT, median, startAgent, stopAll, waitFor, type Agent } from './agents';
import { cpuWindow, fdCount, memAvailableMb, rssKb } from './proc';

const WORKER = path.join(ROOT, 'test', 'fixtures', 'worker.py');
const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const N = Number(opt('--nodes', '64'));
const MIN = Number(opt('--min', String(Math.max(1, N - 1))));
const GROUP = Number(opt('--group-size', '64'));
const TIMEOUT_MS = Number(opt('--timeout', '300')) * 1000;
const COORDINATORS = !argv.includes('--no-coordinator');

const agents: Agent[] = [];
let server: DevServer | undefined;
let controller: ChildProcess | undefined;
let jobId = '';
let outDir = '';
const serverLines: string[] = [];
const LIMIT_RE = /limit|exceed|exhausted|too many|deadline exceeded|buffered events/i;
/** Figures so far, each also written to stderr at once: a later failure must not lose them. */
const report: string[] = [];
const say = (...lines: string[]) => {
  for (const l of lines) console.error(`[${new Date().toISOString().slice(11, 19)}] ${l}`);
  report.push(...lines);
};

/** Nodes whose workers of `round` all wrote their pid file, per round. */
function runningByRound(out: string): Map<number, Set<string>> {
  const rounds = new Map<number, Set<string>>();
  if (!existsSync(out)) return rounds;
  for (const f of readdirSync(out)) {
    const m = /^pid\.(\d+)\.(.+)\.(\d+)$/.exec(f);
    if (!m) continue;
    const r = Number(m[1]);
    if (!rounds.has(r)) rounds.set(r, new Set());
    rounds.get(r)!.add(m[2]);
  }
  return rounds;
}

/** The first round after `after` in which all of `nodes` run; null until there is one. */
function roundWithAll(out: string, nodes: string[], after = 0): number | null {
  for (const [r, set] of [...runningByRound(out)].sort((a, b) => a[0] - b[0])) if (r > after && nodes.every((n) => set.has(n))) return r;
  return null;
}

/** The reaper sidecar of an agent: its child process running reaper-main. */
function reaperPid(agentPid: number): number | null {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === agentPid && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('reaper-main')) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function rssReport(live: Agent[]): string[] {
  const own = live.map((a) => rssKb(a.proc.pid!) ?? 0);
  const reapers = live.map((a) => reaperPid(a.proc.pid!)).map((p) => (p ? rssKb(p) ?? 0 : 0));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const lines = [
    `agent RSS (telastic run, ${own.length} processes): sum ${mb(sum(own))}, per agent median ${mb(median(own))}, min ${mb(Math.min(...own))}, max ${mb(Math.max(...own))}`,
    `reaper sidecars (${reapers.filter((x) => x > 0).length}): sum ${mb(sum(reapers))}, median ${mb(median(reapers))}`,
  ];
  if (controller?.pid) lines.push(`telastic controller RSS ${mb(rssKb(controller.pid) ?? 0)}`);
  if (server) lines.push(`Temporal dev server RSS ${mb(rssKb(server.pid) ?? 0)}, open fds ${fdCount(server.pid)}`);
  lines.push(`agent open fds: median ${median(live.map((a) => fdCount(a.proc.pid!) ?? 0))}; machine MemAvailable ${memAvailableMb()} MiB`);
  return lines;
}

async function main(): Promise<void> {
  const how = COORDINATORS ? 'every agent a coordinator' : '--no-coordinator, one telastic controller';
  say(`scale-agents: ${N} × telastic run --nnodes ${MIN}:${N} --nproc-per-node 1 --rdzv-conf group_size=${GROUP}, ${how} (${os.cpus().length} cores, node ${process.version})`);
  server = await startDevServer({ headless: true, port: 0, onLog: (l) => LIMIT_RE.test(l) && serverLines.push(l) });
  if (!COORDINATORS) controller = spawn(process.execPath, [BIN, 'controller', '--address', server.address], { stdio: 'ignore' });
  const out = (outDir = mkdtempSync(path.join(os.tmpdir(), 'telastic-scale-agents-')));
  const job = (jobId = `scale-${N}-${Date.now()}`);
  const args = [...(COORDINATORS ? [] : ['--no-coordinator']), '--nnodes', `${MIN}:${N}`, '--nproc-per-node', '1', '--max-restarts', '3', '--rdzv-id', job, '--rdzv-conf', `last_call_timeout=30,group_size=${GROUP}`, WORKER, '--out', out];
  const ids = Array.from({ length: N }, (_, i) => `${job}-${String(i).padStart(4, '0')}`);

  const t0 = Date.now();
  for (const id of ids) agents.push(startAgent(server.address, id, args));
  const cpu = cpuWindow({ server: [server.pid], agents: agents.map((a) => a.proc.pid!) });
  const first = await waitFor(`all ${N} nodes running`, () => roundWithAll(out, ids), TIMEOUT_MS, 100);
  const startMs = Date.now() - t0;
  const c = cpu();
  say(`start → all ${N} running (round ${first}): ${secs(startMs)}; CPU meanwhile: server ${c.perGroup.server} %, agents ${c.perGroup.agents} % (of one core), machine ${c.machine} % (of ${os.cpus().length} cores)`);
  const dead = agents.filter((a) => a.proc.exitCode !== null);
  if (dead.length) {
    // Each one's whole output stays beside the run's files; the line said here is its fatal error.
    for (const a of dead) writeFileSync(path.join(out, `${a.nodeId}.log`), a.output());
    const fatal = (a: Agent) => a.output().split('\n').find((l) => /^(Error|FATAL|RangeError|TypeError)\b/.test(l)) ?? a.output().trim().split('\n').pop();
    say(`agents that exited early (${dead.length}; their output in ${out}): ${dead.map((a) => `${a.nodeId} (${a.proc.exitCode}): ${fatal(a)}`).join('; ')}`);
  }

  await new Promise((r) => setTimeout(r, 5000)); // settle: RSS after the round formed
  const steady = cpuWindow({ server: [server.pid], agents: agents.map((a) => a.proc.pid!) });
  await new Promise((r) => setTimeout(r, 10_000));
  const s = steady();
  say(...rssReport(agents));
  say(`CPU while running (10 s): server ${s.perGroup.server} %, agents ${s.perGroup.agents} % (of one core), machine ${s.machine} %`);

  const victim = agents[Math.floor(N / 2)];
  const rest = ids.filter((id) => id !== victim.nodeId);
  const t1 = Date.now();
  victim.proc.kill('SIGKILL');
  const again = await waitFor(`the other ${N - 1} running again`, () => roundWithAll(out, rest, first), TIMEOUT_MS, 100);
  say(`kill -9 of ${victim.nodeId} → the other ${N - 1} running (round ${again}): ${secs(Date.now() - t1)}`);

  writeFileSync(path.join(out, 'finish'), '');
  const live = agents.filter((a) => a !== victim);
  const codes = await Promise.race([Promise.all(live.map((a) => a.exited)), new Promise<null>((r) => setTimeout(() => r(null), 60_000))]);
  say(codes ? `job finished: exit codes ${[...new Set(codes)].join(',')} from ${codes.length} agents` : 'job did not finish within 60 s of the finish file');
  say(serverLines.length ? `server log lines about limits (${serverLines.length}), first: ${serverLines[0].slice(0, 300)}` : 'server log: no limit, exhaustion or deadline lines');
}

/** The job's state and how many nodes are in each state, from its status query. */
async function jobSummary(address: string, job: string): Promise<string> {
  const connection = await Connection.connect({ address });
  try {
    const s = await getJobStatus({ connection }, job);
    const counts = new Map<string, number>();
    for (const n of s.nodes) counts.set(n.state, (counts.get(n.state) ?? 0) + 1);
    return `job ${s.state}, round ${s.round}, world size ${s.worldSize}, restarts ${s.restarts}, nodes ${[...counts].map(([k, v]) => `${v} ${k}`).join(', ')}`;
  } finally {
    await connection.close();
  }
}

async function cleanUp(): Promise<void> {
  await stopAll(agents);
  controller?.kill('SIGKILL');
  await server?.stop();
}

main().then(async () => {
  await cleanUp();
  console.log(report.join('\n'));
}, async (err) => {
  say(`stopped: ${err instanceof Error ? err.message : String(err)}`);
  if (server && jobId) await jobSummary(server.address, jobId).then(say, (e: unknown) => say(`job status: ${String(e)}`));
  for (const a of agents.filter((x) => x.proc.exitCode !== null)) {
    if (outDir) writeFileSync(path.join(outDir, `${a.nodeId}.log`), a.output());
    const fatal = a.output().split('\n').find((l) => /^(Error|FATAL|RangeError|TypeError)\b/.test(l)) ?? a.output().trim().split('\n').pop();
    say(`${a.nodeId} exited ${a.proc.exitCode}: ${fatal} (its output: ${path.join(outDir, `${a.nodeId}.log`)})`);
  }
  await cleanUp();
  console.log(report.join('\n'));
  process.exit(1);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanUp().then(() => process.exit(130)));
