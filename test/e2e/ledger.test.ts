/**
 * The ledger end to end, against a throwaway PostgreSQL 15: a controller with DATABASE_URL, two
 * `telastic run` agents, a worker that crashes once. PostgreSQL is stopped mid-job: the job runs
 * on, and once the database is back every record arrives exactly once.
 */
import { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import path from 'node:path';
import { jobTimeline } from '../../src/ledger/store';
import { testAddress } from '../setup/temporal';
import { postgresPerFile } from '../setup/postgres';
import { FAST_RDZV, WORKER, e2eSuite, type Agent, finish, startAgent, startTelastic, status, tmpDir, uniqueJobId, waitFor, waitForRound } from './harness';

const e2e = e2eSuite();
const postgres = postgresPerFile({ max: 2 });

test('a job is recorded round by round; PostgreSQL stopped mid-job loses no record and doubles none', async () => {
  const job = uniqueJobId('ledger');
  const queue = `tq-${job}`;
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], { DATABASE_URL: postgres.db.url, TELASTIC_LEDGER: undefined });
  e2e.agents.push(controller);
  await waitFor('the ledger migrated', async () => (await postgres.pool.query("SELECT to_regclass('rounds') AS t")).rows[0].t !== null, 30_000);
  const out = tmpDir('ledger');
  const args = ['--nnodes', '2', '--max-restarts', '2', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out, '--crash-rank', '1'];
  const agents = ['ledger-a', 'ledger-b'].map((n) => startAgent(testAddress(), n, args));
  e2e.agents.push(...agents);
  // Round 1 fails (rank 1 exits 3) and is recorded; then the database goes away.
  await waitForRound(e2e.conn, job, (s) => s.restarts === 1);
  await waitFor('round 1 recorded', async () => (await jobTimeline(postgres.pool, job)).rounds.length >= 1, 30_000);
  await postgres.db.stop();
  finish(out);
  expect(await Promise.all(agents.map((a) => a.exited))).toEqual([0, 0]);
  expect((await status(e2e.conn, job)).state).toBe('succeeded');

  await postgres.db.start();
  const t = await waitFor('the job recorded to its end', async () => {
    const tl = await jobTimeline(postgres.pool, job);
    return tl.job?.state === 'succeeded' ? tl : null;
  }, 90_000);
  const s = await status(e2e.conn, job);
  expect(t.rounds.map((r) => r.round)).toEqual([...Array(s.round).keys()].map((i) => i + 1));
  expect(t.rounds.every((r) => r.endedAt !== null && r.worldSize === 2)).toBe(true);
  expect(t.rounds.at(-1)?.endReason).toBe('succeeded');
  expect(t.failures).toEqual([expect.objectContaining({ round: 1, rank: 1, exitCode: 3 })]);
  expect(t.nodeEvents.filter((e) => e.event === 'join').map((e) => e.nodeId).sort()).toEqual(['ledger-a', 'ledger-b']);
  // Every record once: seqs are 1..n with no gap and no repeat across the tables.
  const seqs = [...t.rounds.map((r) => r.seq), ...t.failures.map((f) => f.seq), ...t.checkpoints.map((c) => c.seq), ...t.nodeEvents.map((e) => e.seq)];
  expect(new Set(seqs).size).toBe(seqs.length);
  await stopLedgerHost(controller);
});

test('a node that fails twice is quarantined: the job goes on without it, and takes it back once released', async () => {
  const job = uniqueJobId('quarantine');
  const queue = `tq-${job}`;
  const env = { DATABASE_URL: postgres.db.url, TELASTIC_QUARANTINE_AFTER: '2', TELASTIC_LEDGER: undefined };
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], env);
  e2e.agents.push(controller);
  await waitFor('the ledger migrated', async () => (await postgres.pool.query("SELECT to_regclass('quarantine') AS t")).rows[0].t !== null, 30_000);
  const out = tmpDir('quarantine');
  // Rank 1 (group rank 1's only worker) crashes in the first two rounds: both failures are its node's.
  const args = ['--nnodes', '1:2', '--max-restarts', '3', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out, '--crash-rank', '1', '--crash-times', '2'];
  const agents = ['quarantine-a', 'quarantine-b'].map((n) => startAgent(testAddress(), n, args));
  e2e.agents.push(...agents);

  const kept = await waitForRound(e2e.conn, job, (s) => s.state === 'running' && !!s.quarantined?.length && s.worldSize === 1);
  const bad = kept.quarantined![0].nodeId;
  expect(kept.quarantined![0].reason).toMatch(/^2 failures in 1h00m \(1 job\); last: /);
  expect(kept.nodes.find((n) => n.nodeId === bad)?.state).toBe('quarantined');
  expect(kept.nodes.find((n) => n.state === 'running')?.nodeId).not.toBe(bad);
  const before = await jobTimeline(postgres.pool, job);
  expect(before.failures.map((f) => f.nodeId)).toEqual([bad, bad]);
  await waitFor('the quarantine recorded', async () => (await jobTimeline(postgres.pool, job)).nodeEvents.some((e) => e.event === 'quarantine' && e.nodeId === bad), 30_000);

  // The next job: the quarantined node joins it too (another agent with its node id) and is kept
  // out; the job runs on the other node. Its first round may form before the ledger answered (the
  // job probes the ledger first): the answer then re-forms it without the node, spending no restart.
  const next = `${job}-next`;
  const nextOut = tmpDir('quarantine-next');
  const nextArgs = ['--nnodes', '1:2', '--no-coordinator', '--task-queue', queue, '--rdzv-id', next, ...FAST_RDZV, WORKER, '--out', nextOut];
  const nextAgents = [
    startTelastic(`${bad}-next`, ['run', '--rdzv-endpoint', testAddress(), '--node-id', bad, '--local-addr', '127.0.0.1', ...nextArgs]),
    startAgent(testAddress(), 'quarantine-c', nextArgs),
  ];
  e2e.agents.push(...nextAgents);
  const nextKept = await waitForRound(e2e.conn, next, (s) => s.state === 'running' && !!s.quarantined?.length && s.worldSize === 1);
  expect(nextKept.restarts).toBe(0);
  expect(nextKept.nodes.map((n) => [n.nodeId, n.state]).sort()).toEqual([[bad, 'quarantined'], ['quarantine-c', 'running']]);
  finish(nextOut);
  expect(await Promise.all(nextAgents.map((a) => a.exited))).toEqual([0, 0]);

  // Released by an operator (`telastic nodes --release`): the job learns within its 15 s recheck and admits the node again.
  const release = startTelastic(`${job}-release`, ['nodes', '--release', bad], env);
  expect(await release.exited).toBe(0);
  expect(release.output()).toContain(bad);
  await waitForRound(e2e.conn, job, (s) => s.state === 'running' && !s.quarantined && s.worldSize === 2, 60_000);
  finish(out);
  expect(await Promise.all(agents.map((a) => a.exited))).toEqual([0, 0]);
  const t = await waitFor('the job recorded to its end', async () => {
    const tl = await jobTimeline(postgres.pool, job);
    return tl.job?.state === 'succeeded' ? tl : null;
  }, 60_000);
  expect(t.nodeEvents.filter((e) => e.nodeId === bad && ['quarantine', 'release'].includes(e.event)).map((e) => e.event)).toEqual(['quarantine', 'release']);
  // The recheck's timer says what it is for in the Web UI, as the job's other timers do.
  const { events } = await new Client({ connection: e2e.conn }).workflow.getHandle(job).fetchHistory();
  const summaries = (events ?? []).flatMap((e) => (e.timerStartedEventAttributes && e.userMetadata?.summary ? [defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary)] : []));
  expect(summaries).toContain('quarantine recheck: ask the ledger again which of the job\'s nodes are quarantined');
  await stopLedgerHost(controller);
});

/** The ledger queue is one per namespace: a test's ledger host must not serve the next test's jobs. */
async function stopLedgerHost(controller: Agent): Promise<void> {
  controller.proc.kill('SIGTERM');
  expect(await controller.exited).toBe(0);
}

test('with no DATABASE_URL a controller hosts the embedded ledger; history reads it alongside, and after the controller stopped', async () => {
  const job = uniqueJobId('embedded');
  const queue = `tq-${job}`;
  const env = { DATABASE_URL: undefined, TELASTIC_LEDGER: undefined, TELASTIC_LEDGER_DIR: path.join(tmpDir('embedded'), 'ledger') };
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], env);
  e2e.agents.push(controller);
  await waitFor('the controller hosting the ledger', () => controller.output().includes(`with the ledger (${env.TELASTIC_LEDGER_DIR})`), 60_000);
  const out = tmpDir('embedded-out');
  const agent = startAgent(testAddress(), 'embedded-a', ['--nnodes', '1', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out]);
  e2e.agents.push(agent);
  await waitForRound(e2e.conn, job, (s) => s.state === 'running');
  finish(out);
  expect(await agent.exited).toBe(0);

  const history = async () => {
    const h = startTelastic(`${job}-history`, ['history', job], env);
    return { code: await h.exited, text: h.output() };
  };
  const alongside = await waitFor('the job recorded to its end', async () => {
    const h = await history();
    return h.code === 0 && h.text.includes('job succeeded') ? h : null;
  }, 60_000);
  expect(alongside.text).toMatch(/round 1 started · world size \d+ · nodes \(group rank\): embedded-a/);

  await stopLedgerHost(controller);
  const alone = await history(); // no host now: the command hosts the ledger for itself
  expect(alone).toEqual(alongside);
});
