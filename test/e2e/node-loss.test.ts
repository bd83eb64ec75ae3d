/** Node loss: an agent killed with SIGKILL, or frozen with SIGSTOP, is dropped and the job goes on. */
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, WORKER, alive, finish, recordedPids, startAgent, status, tmpDir, uniqueJobId, waitFor, waitForRound, e2eSuite } from './harness';

const e2e = e2eSuite();
const agents = e2e.agents;

function jobArgs(job: string, out: string, nnodes: string): string[] {
  return ['--nnodes', nnodes, '--nproc-per-node', '2', '--max-restarts', '3', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out, '--child'];
}

test('kill -9 of an agent: its workers die with it, the job shrinks and goes on', async () => {
  const out = tmpDir('kill');
  const job = uniqueJobId('kill');
  const trio = ['kill-a', 'kill-b', 'kill-c'].map((n) => startAgent(testAddress(), n, jobArgs(job, out, '2:3')));
  agents.push(...trio);
  const first = await waitForRound(e2e.conn, job, (s) => s.worldSize === 6);
  await waitFor('6 workers', () => recordedPids(out, first.round).length === 6);
  const victim = trio[1];
  const victimPids = recordedPidsOf(out, first.round, 'kill-b');
  expect(victimPids).toHaveLength(2);

  victim.proc.kill('SIGKILL');
  const killedAt = Date.now();
  // No training process of the killed agent outlives it by 5 s (grandchildren included: --child).
  await waitFor('victim workers gone', () => victimPids.every((p) => !alive(p)), 5_000, 50);
  expect(Date.now() - killedAt).toBeLessThan(5_000);

  const next = await waitForRound(e2e.conn, job, (s) => s.worldSize === 4 && s.round > first.round);
  expect(next.nodes.find((n) => n.nodeId === 'kill-b')?.state).toBe('lost');
  expect(next.lastFailure).toMatchObject({ nodeId: 'kill-b', rank: null });
  // Seen by its ring predecessor's peer watch (src/job/peer-watch.ts), not the heartbeat timeout.
  expect(next.lastFailure?.message).toMatch(/peer watch: peer kill-b's agent connection closed, seen by kill-[ac]/);
  expect(next.restarts).toBe(1);
  finish(out);
  expect(await Promise.all([trio[0].exited, trio[2].exited])).toEqual([0, 0]);
});

test('kill -STOP of an agent and its workers: dropped within the heartbeat timeout; after kill -CONT it rejoins', async () => {
  const out = tmpDir('stop');
  const job = uniqueJobId('stop');
  const pair = ['stop-a', 'stop-b'].map((n) => startAgent(testAddress(), n, jobArgs(job, out, '1:2')));
  agents.push(...pair);
  const first = await waitForRound(e2e.conn, job, (s) => s.worldSize === 4);
  await waitFor('4 workers', () => recordedPids(out, first.round).length === 4);
  const frozen = pair[1];
  const frozenWorkers = recordedPidsOf(out, first.round, 'stop-b');
  const group = [frozen.proc.pid!, ...frozenWorkers];
  for (const pid of group) process.kill(pid, 'SIGSTOP');
  const stoppedAt = Date.now();

  const shrunk = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2 && s.round > first.round, 30_000);
  const detectedIn = Date.now() - stoppedAt;
  expect(shrunk.nodes.find((n) => n.nodeId === 'stop-b')?.state).toBe('lost');
  expect(shrunk.lastFailure).toMatchObject({ nodeId: 'stop-b', rank: null });
  expect(shrunk.lastFailure?.message).toMatch(/heartbeat/);
  // Heartbeat timeout is 3 s; allow for the server's timer granularity and the restart itself.
  expect(detectedIn).toBeLessThan(15_000);
  // The survivor's workers of the first round were stopped (they were not in a collective here,
  // but they would have kept running forever).
  for (const pid of recordedPidsOf(out, first.round, 'stop-a')) await waitFor(`survivor worker ${pid} stopped`, () => !alive(pid), 10_000);

  for (const pid of group) process.kill(pid, 'SIGCONT');
  // The woken node learns it was dropped, kills its stale workers and rejoins as a newcomer.
  await waitFor('frozen workers killed', () => frozenWorkers.every((p) => !alive(p)), 20_000);
  const back = await waitForRound(e2e.conn, job, (s) => s.worldSize === 4 && s.round > shrunk.round, 30_000);
  expect(back.nodes.filter((n) => n.state === 'running').map((n) => n.nodeId)).toEqual(['stop-a', 'stop-b']);
  expect(back.restarts).toBe(1); // admitting the woken node cost nothing
  finish(out);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);
  expect((await status(e2e.conn, job)).state).toBe('succeeded');
});

function recordedPidsOf(out: string, round: number, node: string): number[] {
  const all = recordedPids(out, round);
  const mine = require('node:fs').readdirSync(out).filter((f: string) => f.startsWith(`pid.${round}.${node}.`));
  return mine.map((f: string) => Number(require('node:fs').readFileSync(require('node:path').join(out, f), 'utf8'))).filter((p: number) => all.includes(p));
}
