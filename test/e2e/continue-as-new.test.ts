/** Continue-as-new at round boundaries carries the whole job state; agents follow the chain. */
import { Client, Connection } from '@temporalio/client';
import { startJob } from '../../src/client/api';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, WORKER, finish, startAgent, status, stopAll, tmpDir, uniqueJobId, waitForRound, type Agent } from './harness';

const agents: Agent[] = [];
afterAll(() => stopAll(agents));

test('a job that continues-as-new every round keeps its members, restarts and round count', async () => {
  const conn = await Connection.connect({ address: testAddress() });
  const out = tmpDir('can');
  const job = uniqueJobId('can');
  const scriptArgs = ['--out', out, '--crash-rank', '1'];
  const first = await startJob({ connection: conn }, {
    jobId: job, minNodes: 1, maxNodes: 2, nprocPerNode: 1, maxRestarts: 3,
    entrypoint: { script: WORKER, args: scriptArgs },
    rdzv: { lastCallTimeoutMs: 1000, heartbeatTimeoutMs: 3000, prepareTimeoutMs: 3000 },
    shutdownTimeoutMs: 3000,
    continueAsNewEveryRounds: 1,
  });
  const args = ['--nnodes', '1:2', '--rdzv-id', job, ...FAST_RDZV, WORKER, ...scriptArgs];
  agents.push(startAgent(testAddress(), 'can-a', args));
  await waitForRound(conn, job, (s) => s.worldSize === 1);
  agents.push(startAgent(testAddress(), 'can-b', args));
  // Admitting can-b (round 2), then rank 1's crash (one restart, round 3), each in a new run.
  const s = await waitForRound(conn, job, (x) => x.worldSize === 2 && x.restarts === 1, 60_000);
  expect(s.nodes.filter((n) => n.groupRank !== null).map((n) => n.nodeId)).toEqual(['can-a', 'can-b']);
  expect(s.lastFailure).toMatchObject({ nodeId: 'can-b', rank: 1, exitCode: 3 });
  const latest = await new Client({ connection: conn }).workflow.getHandle(job).describe();
  expect(latest.runId).not.toBe(first.firstExecutionRunId);
  finish(out);
  const codes = await Promise.all(agents.map((a) => a.exited));
  if (codes.some(Boolean)) console.log(agents.map((a) => a.output().slice(-1500)).join('\n-----\n'));
  expect(codes).toEqual([0, 0]);
  expect(await status(conn, job)).toMatchObject({ state: 'succeeded', restarts: 1, round: s.round });
  await conn.close();
});
