/** Worker failures: the whole round restarts, counted once; restarts exhausted → root cause. */
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, WORKER, recordedEnvs, startAgent, status, tmpDir, uniqueJobId, e2eSuite } from './harness';

const e2e = e2eSuite();
const agents = e2e.agents;

test('a worker crash restarts the round on every node, counted once for the job', async () => {
  const out = tmpDir('crash');
  const job = uniqueJobId('crash');
  const args = ['--nnodes', '2', '--nproc-per-node', '2', '--max-restarts', '1', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out, '--seconds', '2', '--crash-rank', '3'];
  const pair = [startAgent(testAddress(), 'crash-a', args), startAgent(testAddress(), 'crash-b', args)];
  agents.push(...pair);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);

  const envs = [...recordedEnvs(out).values()];
  const rounds = [...new Set(envs.map((e) => e.TELASTIC_ROUND))].sort();
  expect(rounds).toEqual(['1', '2']);
  // Every rank ran again (the whole round restarted), and all saw the same job-wide count.
  for (const round of rounds) expect(envs.filter((e) => e.TELASTIC_ROUND === round)).toHaveLength(4);
  expect(envs.filter((e) => e.TELASTIC_ROUND === '2').map((e) => e.TORCHELASTIC_RESTART_COUNT)).toEqual(['1', '1', '1', '1']);
  const s = await status(e2e.conn, job);
  expect(s).toMatchObject({ state: 'succeeded', restarts: 1 });
  expect(s.lastFailure).toMatchObject({ rank: 3, exitCode: 3, message: 'RuntimeError: rank 3 crashed on purpose' });
});

test('restarts exhausted: every node exits non-zero with the root cause', async () => {
  const out = tmpDir('exhaust');
  const job = uniqueJobId('exhaust');
  const args = ['--nnodes', '2', '--nproc-per-node', '2', '--max-restarts', '1', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out, '--crash-rank', '1', '--crash-times', '5'];
  const pair = [startAgent(testAddress(), 'exhaust-a', args), startAgent(testAddress(), 'exhaust-b', args)];
  agents.push(...pair);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([1, 1]);
  for (const a of pair) {
    expect(a.output()).toMatch(/job .* failed after 1 restart\(s\) \(max 1\): rank 1 on node exhaust-\w: exit code 3: RuntimeError: rank 1 crashed on purpose/);
  }
  expect(await status(e2e.conn, job)).toMatchObject({ state: 'failed', restarts: 2, lastFailure: { rank: 1, exitCode: 3 } });
});
