/**
 * Wrong drops under load (issue 21, deliverable 4): how many healthy nodes the job drops when the
 * machine is busy. Three agents (1 worker each, test/fixtures/worker.py) run one job of nnodes
 * 2:3; rank 0 crashes 0.5 s into every attempt, so the job goes through a round boundary every
 * few seconds, and a bounded CPU burner (one busy loop per core, ended with the run) holds the
 * machine. Every agent stays alive throughout, so any node the job records as lost was dropped
 * wrongly; the figure is per round, and says whether peer watch or a timeout dropped it.
 * torchrun has no counterpart to this figure (it restarts every node on any failure; there is no
 * drop to get wrong). Product defaults unless --rdzv-conf says otherwise.
 * Usage: node lib/bench/false-drops.js [--rounds 20] [--rdzv-conf k=v,…]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getJobStatus } from '../src/client/api';
import { Connection } from '@temporalio/client';
import { startDevServer } from '../src/temporal/dev-server';
import { ROOT, startAgent, stopAll, waitFor, type Agent } from './agents';
import { cpuSeconds } from './proc';

const WORKER = path.join(ROOT, 'test', 'fixtures', 'worker.py');
const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(opt('--rounds', '20'));
const CONF = opt('--rdzv-conf', '');
/** The burner's bound: it ends by itself even if this script is killed. */
const BURN_MS = 15 * 60_000;

function burners(): ChildProcess[] {
  const loop = `const end = Date.now() + ${BURN_MS}; while (Date.now() < end) {}`;
  return os.cpus().map(() => spawn(process.execPath, ['-e', loop], { stdio: 'ignore' }));
}

async function main(): Promise<void> {
  const server = await startDevServer({ headless: true, port: 0 });
  const burn = burners();
  const burnAt = Date.now();
  const agents: Agent[] = [];
  try {
    const out = mkdtempSync(path.join(os.tmpdir(), 'telastic-bench-drops-'));
    const job = `drops-${Date.now()}`;
    const args = ['--nnodes', '2:3', '--nproc-per-node', '1', '--max-restarts', String(ROUNDS * 3), '--rdzv-id', job,
      ...(CONF ? ['--rdzv-conf', CONF] : []), WORKER, '--out', out, '--crash-rank', '0', '--crash-times', String(ROUNDS * 3), '--crash-after', '0.5'];
    for (const n of ['a', 'b', 'c']) agents.push(startAgent(server.address, `${job}-${n}`, args));
    const conn = await Connection.connect({ address: server.address });
    const seen = new Map<number, { world: number; lost: string[] }>();
    const drops = new Map<string, string>(); // `${round}/${node}` → how
    let first = 0;
    let firstAt = 0;
    let restarts = 0;
    let wasLost = new Set<string>();
    await waitFor(`${ROUNDS} rounds after the first of world size 3`, async () => {
      const s = await getJobStatus({ connection: conn }, job).catch(() => null);
      if (!s) return false;
      if (!first && s.worldSize === 3) [first, firstAt] = [s.round, Date.now()];
      if (!first) return false;
      restarts = s.restarts;
      const lost = s.nodes.filter((n) => n.state === 'lost').map((n) => n.nodeId);
      seen.set(s.round, { world: s.worldSize, lost });
      // A drop is a node going into `lost`; it stays so until it rejoins, one drop however many samples see it.
      for (const n of lost) if (!wasLost.has(n)) drops.set(`${s.round}/${n}`, s.lastFailure?.nodeId === n ? (s.lastFailure.message ?? '') : 'lost');
      wasLost = new Set(lost);
      return s.round >= first + ROUNDS;
    }, 15 * 60_000, 100);
    for (const a of agents) if (a.proc.exitCode !== null) throw new Error(`agent ${a.nodeId} exited ${a.proc.exitCode} during the run: its drops would not be wrong ones\n${a.output().slice(-1500)}`);
    writeFileSync(path.join(out, 'finish'), '');
    const byPeer = [...drops.values()].filter((m) => m.includes('peer watch: ')).length;
    console.log(`wrong drops under load (${ROUNDS} rounds from round ${first}, 3 agents alive throughout, ${os.cpus().length} cores each held by a busy loop, --rdzv-conf ${CONF || '(defaults)'})`);
    const secs = (Date.now() - firstAt) / 1000;
    const burnt = burn.reduce((t, b) => t + (cpuSeconds(b.pid!) ?? 0), 0);
    const worlds = [...seen.values()].map((r) => r.world);
    console.log(`  ${secs.toFixed(1)} s; the burners used ${burnt.toFixed(1)} CPU-seconds (${((100 * burnt) / ((Date.now() - burnAt) / 1000)).toFixed(0)} % of one core while they ran); restarts ${restarts}; world sizes seen ${worlds.join(' ')}`);
    console.log(`  rounds observed ${seen.size}; healthy nodes dropped ${drops.size} (by peer watch ${byPeer}, by a timeout ${drops.size - byPeer})`);
    for (const [k, how] of drops) console.log(`  round/node ${k}: ${how}`);
    await conn.close();
  } finally {
    for (const b of burn) b.kill('SIGKILL');
    await stopAll(agents);
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
