/** Membership: joiners admitted for free, spares replace lost nodes, scale and drain shrink the job. */
import { JobInputError, drainNode, scaleJob } from '../../src/client/api';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, WORKER, finish, recordedEnvs, startAgent, status, tmpDir, uniqueJobId, waitFor, waitForRound, e2eSuite } from './harness';

const e2e = e2eSuite();
const agents = e2e.agents;

const args = (job: string, out: string, nnodes: string, maxRestarts = 0) => ['--nnodes', nnodes, '--max-restarts', String(maxRestarts), '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];

test('a node joining a running job is admitted: world size grows, no restart spent', async () => {
  const out = tmpDir('grow');
  const job = uniqueJobId('grow');
  const a = startAgent(testAddress(), 'grow-a', args(job, out, '1:3'));
  agents.push(a);
  const first = await waitForRound(e2e.conn, job, (s) => s.worldSize === 1);
  const b = startAgent(testAddress(), 'grow-b', args(job, out, '1:3'));
  agents.push(b);
  const grown = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  expect(grown.round).toBeGreaterThan(first.round);
  expect(grown.restarts).toBe(0);
  expect(grown.nodes.filter((n) => n.groupRank !== null).map((n) => n.nodeId)).toEqual(['grow-a', 'grow-b']);
  // --max-restarts 0: the membership change did not count against it.
  await waitFor('round 2 workers', () => [...recordedEnvs(out).values()].filter((e) => e.TELASTIC_ROUND === String(grown.round)).length === 2);
  for (const e of [...recordedEnvs(out).values()].filter((e) => e.TELASTIC_ROUND === String(grown.round))) expect(e.TORCHELASTIC_RESTART_COUNT).toBe('0');
  finish(out);
  expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
});

test('a hot spare beyond maxNodes replaces a lost node in the next round', async () => {
  const out = tmpDir('spare');
  const job = uniqueJobId('spare');
  const a = ['spare-a', 'spare-b'].map((n) => startAgent(testAddress(), n, args(job, out, '1:2', 2)));
  agents.push(...a);
  await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  const c = startAgent(testAddress(), 'spare-c', args(job, out, '1:2', 2));
  agents.push(c);
  const withSpare = await waitFor('spare listed', async () => {
    const s = await status(e2e.conn, job);
    return s.spares.includes('spare-c') ? s : null;
  });
  expect(withSpare.worldSize).toBe(2);
  const [survivor, victim] = withSpare.nodes.filter((n) => n.groupRank !== null).map((n) => a.find((x) => x.nodeId === n.nodeId)!);
  victim.proc.kill('SIGKILL');
  const replaced = await waitForRound(e2e.conn, job, (s) => s.nodes.some((n) => n.nodeId === 'spare-c' && n.state === 'running'));
  expect(replaced.worldSize).toBe(2);
  expect(replaced.nodes.filter((n) => n.groupRank !== null).map((n) => n.nodeId)).toEqual([survivor.nodeId, 'spare-c']);
  finish(out);
  expect(await Promise.all([survivor.exited, c.exited])).toEqual([0, 0]);
});

test('scale down and drain shrink the job; the drained node exits 0; bad input changes nothing', async () => {
  const out = tmpDir('shrink');
  const job = uniqueJobId('shrink');
  const trio = ['shrink-a', 'shrink-b', 'shrink-c'].map((n) => startAgent(testAddress(), n, args(job, out, '1:3')));
  agents.push(...trio);
  const full = await waitForRound(e2e.conn, job, (s) => s.worldSize === 3);
  const o = { connection: e2e.conn };

  await expect(scaleJob(o, job, { minNodes: 3, maxNodes: 2 })).rejects.toThrow(new JobInputError('minNodes 3 exceeds maxNodes 2', job));
  await expect(drainNode(o, job, 'no-such-node')).rejects.toThrow(/^node no-such-node is not in job shrink-\S+ \(nodes: shrink-., shrink-., shrink-.\)$/);
  expect(await status(e2e.conn, job)).toMatchObject({ round: full.round, worldSize: 3, minNodes: 1, maxNodes: 3 });

  // Scale to max 2: the newest member steps back as a spare; no restart is counted.
  await expect(scaleJob(o, job, { maxNodes: 2 })).resolves.toEqual({ minNodes: 1, maxNodes: 2 });
  const order = full.nodes.filter((n) => n.groupRank !== null).map((n) => n.nodeId);
  const scaled = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  expect(scaled.spares).toEqual([order[2]]);
  expect(scaled.restarts).toBe(0);

  // Drain a member: the spare takes its place, and the drained node's `telastic run` exits 0.
  const agentOf = (id: string) => trio.find((t) => t.nodeId === id)!;
  await expect(drainNode(o, job, order[0])).resolves.toBe('applied');
  expect(await agentOf(order[0]).exited).toBe(0);
  expect(agentOf(order[0]).output()).toContain('was drained');
  const drained = await waitForRound(e2e.conn, job, (s) => s.nodes.some((n) => n.nodeId === order[0] && n.state === 'drained'));
  expect(drained.nodes.filter((n) => n.groupRank !== null).map((n) => n.nodeId)).toEqual([order[1], order[2]]);
  expect(drained.restarts).toBe(0);
  finish(out);
  expect(await Promise.all([agentOf(order[1]).exited, agentOf(order[2]).exited])).toEqual([0, 0]);
});

test('SIGTERM to an agent is a graceful leave: its workers stop, the job goes on without it, no restart spent', async () => {
  const out = tmpDir('leave');
  const job = uniqueJobId('leave');
  const pair = ['leave-a', 'leave-b'].map((n) => startAgent(testAddress(), n, args(job, out, '1:2')));
  agents.push(...pair);
  await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  pair[1].proc.kill('SIGTERM');
  expect(await pair[1].exited).toBe(143);
  const after = await waitForRound(e2e.conn, job, (s) => s.worldSize === 1);
  expect(after.nodes.find((n) => n.nodeId === 'leave-b')?.state).toBe('left');
  expect(after.restarts).toBe(0);
  finish(out);
  expect(await pair[0].exited).toBe(0);
});
