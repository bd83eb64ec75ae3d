/**
 * Peer watch (issue 21): a node killed with SIGKILL is noticed through its agent's connection to
 * its round peer closing, long before its heartbeat timeout, and the survivor re-forms without
 * waiting for the dead node's `prepare`. The workload has no collectives (test/fixtures/worker.py),
 * so without peer watch only the heartbeat timeout (20 s here) would notice the loss. And the price
 * of a wrong drop: a live node whose watch connection the network resets is dropped, then rejoins.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { testAddress } from '../setup/temporal';
import { WORKER, alive, finish, recordedPids, startAgent, status, tmpDir, uniqueJobId, waitFor, waitForRound, e2eSuite } from './harness';

const e2e = e2eSuite();
const HEARTBEAT_S = 20;
const PREPARE_S = 10;

/** Two agents (`<name>-a`, `<name>-b`, 1:2 × 2) of one job, once all four workers run. */
async function pairRunning(name: string) {
  const out = tmpDir(name);
  const job = uniqueJobId(name);
  const conf = `heartbeat_timeout=${HEARTBEAT_S},last_call_timeout=1,join_timeout=60,prepare_timeout=${PREPARE_S}`;
  const args = ['--nnodes', '1:2', '--nproc-per-node', '2', '--max-restarts', '3', '--rdzv-id', job, '--rdzv-conf', conf, '--shutdown-timeout', '3', '--monitor-interval', '0.1', WORKER, '--out', out];
  const pair = [`${name}-a`, `${name}-b`].map((n) => startAgent(testAddress(), n, args));
  e2e.agents.push(...pair);
  const first = await waitForRound(e2e.conn, job, (s) => s.worldSize === 4 && s.state === 'running');
  await waitFor('4 workers', () => recordedPids(out, first.round).length === 4);
  return { out, job, pair, first };
}

test('kill -9 of an agent: the survivor runs again well before heartbeat_timeout, the dead node is blamed once', async () => {
  const { out, job, pair, first } = await pairRunning('peer');
  const victimPids = pidsOf(out, first.round, 'peer-b');
  expect(victimPids).toHaveLength(2);

  pair[1].proc.kill('SIGKILL');
  const killedAt = Date.now();
  // The survivor's workers of a later round: what "back to training" means here.
  await waitFor('survivor workers again', () => pidsAfter(out, first.round, 'peer-a').length === 2, HEARTBEAT_S * 1000 * 2, 20);
  const backIn = Date.now() - killedAt;
  console.log(`peer watch e2e: kill -9 of peer-b → peer-a's workers running again in ${(backIn / 1000).toFixed(2)} s (heartbeat_timeout ${HEARTBEAT_S} s, prepare_timeout ${PREPARE_S} s)`);

  const next = await waitForRound(e2e.conn, job, (s) => s.round > first.round && s.state === 'running');
  expect(next.worldSize).toBe(2);
  expect(next.nodes.filter((n) => n.state === 'running').map((n) => n.nodeId)).toEqual(['peer-a']);
  expect(next.nodes.find((n) => n.nodeId === 'peer-b')?.state).toBe('lost');
  expect(next.lastFailure).toMatchObject({ nodeId: 'peer-b', rank: null });
  expect(next.lastFailure?.message).toMatch(/peer watch: peer peer-b's agent connection closed.*seen by peer-a/);
  expect(next.restarts).toBe(1); // one failure restart, as for a node lost by heartbeat timeout
  // Not the heartbeat timeout, nor a prepare of the dead node waited out.
  expect(backIn).toBeLessThan(PREPARE_S * 1000);
  // The killed agent's workers die with it (within 5 s, DESIGN.md), which may be after the survivor is back.
  await waitFor('victim workers gone', () => victimPids.every((p) => !alive(p)), 5_000, 50);

  finish(out);
  expect(await pair[0].exited).toBe(0);
  expect((await status(e2e.conn, job)).state).toBe('succeeded');
});

/** Worker pid files of `node` in `round`: `pid.<round>.<node>.<local rank>`. */
function pidsOf(out: string, round: number, node: string): number[] {
  return readdirSync(out).filter((f) => f.startsWith(`pid.${round}.${node}.`)).map((f) => Number(readFileSync(path.join(out, f), 'utf8')));
}

/** Worker pid files of `node` in rounds after `round`. */
function pidsAfter(out: string, round: number, node: string): string[] {
  return readdirSync(out).filter((f) => {
    const m = /^pid\.(\d+)\.(.+)\.(\d+)$/.exec(f);
    return m !== null && Number(m[1]) > round && m[2] === node;
  });
}

test('a healthy node wrongly dropped (its watch connection reset by the network): it rejoins at the next boundary, no further restart', async () => {
  const { out, job, pair, first } = await pairRunning('reset');
  // What a network that drops a connection looks like: the kernel aborts the sockets that
  // connect to reset-b's listening ports (its watch port among them), nothing else changes.
  const ports = listeningPorts(pair[1].proc.pid!);
  expect(ports.length).toBeGreaterThan(0);
  for (const p of ports) execFileSync('ss', ['-K', 'dst', '127.0.0.1', 'dport', '=', `:${p}`]);

  const dropped = await waitForRound(e2e.conn, job, (s) => s.round > first.round && s.restarts === 1, 30_000);
  expect(dropped.lastFailure).toMatchObject({ nodeId: 'reset-b', rank: null });
  expect(dropped.lastFailure?.message).toMatch(/peer watch: peer reset-b's agent connection closed/);
  // The dropped node learns it, stops its workers and joins again as a newcomer: admitted free.
  const back = await waitForRound(e2e.conn, job, (s) => s.worldSize === 4 && s.round > dropped.round && s.state === 'running', 60_000);
  expect(back.nodes.filter((n) => n.state === 'running').map((n) => n.nodeId).sort()).toEqual(['reset-a', 'reset-b']);
  expect(back.restarts).toBe(1);
  finish(out);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);
  expect((await status(e2e.conn, job)).state).toBe('succeeded');
});

/** TCP ports process `pid` listens on (ss -ltnp). */
function listeningPorts(pid: number): number[] {
  const lines = execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' }).split('\n');
  return lines.filter((l) => l.includes(`pid=${pid},`)).map((l) => Number(/:(\d+)\s/.exec(l.split(/\s+/).slice(3).join(' '))?.[1])).filter((p) => p > 0);
}
