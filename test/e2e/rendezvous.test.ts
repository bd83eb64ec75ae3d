/** Rendezvous rounds: last call after min, closing at max at once, join timeout. */
import { testAddress } from '../setup/temporal';
import { WORKER, finish, startAgent, status, tmpDir, uniqueJobId, waitForRound, e2eSuite } from './harness';

const e2e = e2eSuite();
const agents = e2e.agents;

const rdzv = (conf: string) => ['--rdzv-conf', `heartbeat_timeout=3,prepare_timeout=3,${conf}`, '--shutdown-timeout', '3'];

test('min reached: the round waits out the last call for more nodes, then forms with those present', async () => {
  const out = tmpDir('rdzv-min');
  const job = uniqueJobId('rdzv-min');
  const args = ['--nnodes', '1:3', '--rdzv-id', job, ...rdzv('last_call_timeout=3'), WORKER, '--out', out];
  const a = startAgent(testAddress(), 'min-a', args);
  agents.push(a);
  // A second node joining within the last call lands in the first round.
  await new Promise((r) => setTimeout(r, 500));
  agents.push(startAgent(testAddress(), 'min-b', args));
  const s = await waitForRound(e2e.conn, job, () => true);
  expect(s.round).toBe(1);
  expect(s.worldSize).toBe(2);
  expect(s.nodes.filter((n) => n.state === 'running').map((n) => n.nodeId)).toEqual(['min-a', 'min-b']);
  finish(out);
  expect(await Promise.all(agents.slice(-2).map((x) => x.exited))).toEqual([0, 0]);
});

test('max reached: the round closes at once, without waiting out the last call', async () => {
  const out = tmpDir('rdzv-max');
  const job = uniqueJobId('rdzv-max');
  const args = ['--nnodes', '1:2', '--rdzv-id', job, ...rdzv('last_call_timeout=600'), WORKER, '--out', out];
  const started = Date.now();
  agents.push(startAgent(testAddress(), 'max-a', args), startAgent(testAddress(), 'max-b', args));
  const s = await waitForRound(e2e.conn, job, () => true, 60_000);
  expect(Date.now() - started).toBeLessThan(60_000); // far below the 600 s last call
  expect(s.worldSize).toBe(2);
  finish(out);
  expect(await Promise.all(agents.slice(-2).map((x) => x.exited))).toEqual([0, 0]);
});

test('join timeout: below min for longer than join_timeout fails the job with a clear reason', async () => {
  const out = tmpDir('rdzv-timeout');
  const job = uniqueJobId('rdzv-timeout');
  const a = startAgent(testAddress(), 'timeout-a', ['--nnodes', '2', '--rdzv-id', job, ...rdzv('join_timeout=2'), WORKER, '--out', out]);
  agents.push(a);
  expect(await a.exited).toBe(1);
  expect(a.output()).toContain('rendezvous timed out: 1 of min 2 nodes joined within join_timeout 2s');
  await expect(status(e2e.conn, job)).resolves.toMatchObject({ state: 'failed' });
});
