/**
 * Pool figures (issue: pools), printed, not asserted. One dev server, one `telastic controller`,
 * three `telastic agent --pool` (1 slot each), stand-in workers (test/fixtures/worker.py):
 *   submit → running        `submitJob` of a 1:2 job on an idle pool → its 2 workers running
 *   freed node → grown      a second job (1:2, on the third node) when the first is cancelled →
 *                           its workers running on 2 nodes (membership change, no restart)
 *   kill -9 → re-formed     one of that job's agents killed (no free node left) → workers running
 *                           again on the survivor (the job's heartbeat timeout)
 *   agent back → grown      the killed agent started again → the job's workers on 2 nodes again
 * Default timings (heartbeat_timeout 10 s, last call none for pool jobs) unless --heartbeat is
 * given. Usage: node lib/bench/pool.js [--runs 3] [--heartbeat 10]
 */
import { Connection } from '@temporalio/client';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cancelJob, getJobStatus } from '../src/client/api';
import { getPoolStatus, submitJob } from '../src/client/pool';
import { startDevServer } from '../src/temporal/dev-server';
import { ROOT, median, startTelastic, stopAll, waitFor, type Agent } from './agents';

const WORKER = path.join(ROOT, 'test', 'fixtures', 'worker.py');
const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt('--runs', '3'));
const HEARTBEAT_MS = Number(opt('--heartbeat', '10')) * 1000;

const tmp = (p: string) => mkdtempSync(path.join(os.tmpdir(), `telastic-bench-${p}-`));
/** Workers recorded for rounds after `round` (each writes pid.<round>.<node>.<rank>). */
const workersAfter = (out: string, round: number) =>
  existsSync(out) ? readdirSync(out).filter((f) => f.startsWith('pid.') && Number(f.split('.')[1]) > round).length : 0;

async function run(address: string, i: number, figures: number[][]): Promise<void> {
  const pool = `bench-pool-${i}-${Date.now()}`;
  const conn = await Connection.connect({ address });
  const procs: Agent[] = [];
  const agent = (n: string) => {
    const a = startTelastic(`${pool}-${n}`, ['agent', '--pool', pool, '--node-id', `${pool}-${n}`, '--local-addr', '127.0.0.1', '--nproc', '1',
      '--allow', path.dirname(WORKER), '--heartbeat-timeout', String(HEARTBEAT_MS / 1000), '--address', address]);
    procs.push(a);
    return a;
  };
  try {
    procs.push(startTelastic(`${pool}-controller`, ['controller', '--address', address]));
    const agents = ['n1', 'n2', 'n3'].map(agent);
    await waitFor('3 free nodes', async () => (await getPoolStatus({ connection: conn }, pool)).nodes.filter((n) => n.state === 'free').length === 3, 120_000);
    const spec = (name: string, out: string) => ({
      jobId: `${pool}-${name}`, pool, minNodes: 1, maxNodes: 2, nprocPerNode: 1, maxRestarts: 3,
      entrypoint: { script: WORKER, args: ['--out', out] }, rdzv: { heartbeatTimeoutMs: HEARTBEAT_MS }, shutdownTimeoutMs: 3000,
    });
    const outA = tmp('pool-a');
    let t0 = Date.now();
    await submitJob({ connection: conn }, spec('a', outA));
    await waitFor('A on 2 nodes', () => workersAfter(outA, 0) === 2, 120_000, 20);
    figures[0].push(Date.now() - t0);

    const outB = tmp('pool-b');
    const b = spec('b', outB);
    await submitJob({ connection: conn }, b);
    await waitFor('B on 1 node', () => workersAfter(outB, 0) === 1, 120_000, 20);
    const roundOf = async () => (await getJobStatus({ connection: conn }, b.jobId)).round;
    let round = await roundOf();
    t0 = Date.now();
    await cancelJob({ connection: conn }, spec('a', outA).jobId);
    await waitFor('B on 2 nodes', () => workersAfter(outB, round) === 2, 120_000, 20);
    figures[1].push(Date.now() - t0);

    const s = await getJobStatus({ connection: conn }, b.jobId);
    round = s.round;
    const victimId = s.nodes.find((n) => n.groupRank === 1)?.nodeId as string;
    const victim = agents.find((a) => a.nodeId === victimId) as Agent;
    // A third job takes the free node, so that B cannot grow into it while the victim is away.
    const outC = tmp('pool-c');
    await submitJob({ connection: conn }, { ...spec('c', outC), maxNodes: 1 });
    await waitFor('C on 1 node', () => workersAfter(outC, 0) === 1, 120_000, 20);
    t0 = Date.now();
    victim.proc.kill('SIGKILL');
    await waitFor('B re-formed', () => workersAfter(outB, round) === 1, 180_000, 20);
    figures[2].push(Date.now() - t0);

    round = await roundOf();
    t0 = Date.now();
    agent(victimId.slice(pool.length + 1));
    await waitFor('B on 2 nodes again', () => workersAfter(outB, round) === 2, 180_000, 20);
    figures[3].push(Date.now() - t0);
    for (const out of [outB, outC]) writeFileSync(path.join(out, 'finish'), '');
  } finally {
    await stopAll(procs);
    await conn.close();
  }
}

async function main(): Promise<void> {
  const names = ['submit → running on 2 nodes (idle pool)', 'other job cancelled → grown into its node', 'kill -9 of an agent → re-formed on the rest', 'agent started again → grown back'];
  const figures: number[][] = names.map(() => []);
  const server = await startDevServer({ port: 0, uiPort: 0, headless: true });
  try {
    for (let i = 0; i < RUNS; i++) await run(server.address, i, figures);
  } finally {
    await server.stop();
  }
  console.log(`pool figures: 3 agents × 1 slot, stand-in workers, heartbeat_timeout ${HEARTBEAT_MS / 1000} s, ${RUNS} run(s)`);
  console.log('| | median | runs |\n|---|---|---|');
  names.forEach((name, i) => console.log(`| ${name} | ${(median(figures[i]) / 1000).toFixed(2)} s | ${figures[i].map((ms) => (ms / 1000).toFixed(2)).join(' ')} |`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
