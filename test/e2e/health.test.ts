/**
 * Node health checks (`--health-check`) with real agents: a node whose check fails is kept out of
 * the round with the check's last stderr line as the reason, and comes back once it passes; a job
 * whose only node fails its check, or is quarantined, fails with "no usable node" and exit code 3
 * within unusable_timeout instead of waiting out join_timeout.
 */
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { testAddress } from '../setup/temporal';
import { postgresPerFile } from '../setup/postgres';
import { submitJob } from '../../src/client/pool';
import { WORKER, e2eSuite, finish, owners, poolState, runTelastic, startAgent, startTelastic, status, testPool, tmpDir, uniqueJobId, waitFor, waitForRound } from './harness';

const e2e = e2eSuite();
const postgres = postgresPerFile({ max: 2 });
const UNUSABLE_S = 4;
const RDZV = ['--rdzv-conf', `heartbeat_timeout=3,last_call_timeout=1,join_timeout=120,prepare_timeout=3,unusable_timeout=${UNUSABLE_S}`, '--shutdown-timeout', '3', '--monitor-interval', '0.1'];
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function dir(prefix: string): string {
  const d = tmpDir(prefix);
  dirs.push(d);
  return d;
}

/** A check that fails with "disk full" while `flag` exists. */
function checkScript(d: string, flag: string): string {
  const file = path.join(d, 'check.sh');
  writeFileSync(file, `#!/bin/sh\necho "checking ${'$'}TELASTIC_NODE_ID round ${'$'}TELASTIC_ROUND" >&2\nif [ -e '${flag}' ]; then echo 'disk full' >&2; exit 1; fi\nexit 0\n`);
  chmodSync(file, 0o755);
  return file;
}

/** The Web UI's summary of the workflow (its current details). */
async function summary(job: string): Promise<string> {
  const meta = await new Client({ connection: e2e.conn }).workflow.getHandle(job).query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return meta.currentDetails ?? '';
}

test('a node failing its health check is kept out with its reason, and comes back once the check passes', async () => {
  const out = dir('health');
  const flag = path.join(out, 'sick');
  writeFileSync(flag, '');
  const check = checkScript(out, flag);
  const job = uniqueJobId('health');
  const args = ['--nnodes', '1:2', '--max-restarts', '0', '--rdzv-id', job, ...RDZV, WORKER, '--out', out];
  e2e.agents.push(startAgent(testAddress(), 'health-a', args), startAgent(testAddress(), 'health-b', ['--health-check', check, ...args]));

  // b's check fails in prepare: the round runs on a alone, b shows as unhealthy with the reason.
  const kept = await waitForRound(e2e.conn, job, (s) => s.worldSize === 1 && !!s.unhealthy?.length, 90_000);
  expect(kept.unhealthy).toEqual([{ nodeId: 'health-b', reason: 'disk full' }]);
  expect(kept.nodes.find((n) => n.nodeId === 'health-b')?.state).toBe('unhealthy');
  expect(kept.nodes.find((n) => n.nodeId === 'health-a')?.state).toBe('running');
  expect(kept.restarts).toBe(0);
  const shown = await runTelastic(['status', job, '--address', testAddress()]);
  expect(shown.stdout).toContain('unhealthy: health-b: health check failed: disk full');
  expect(await summary(job)).toContain('health check of health-b failing: "disk full"');
  // The history has the failed prepare with the reason.
  const history = await new Client({ connection: e2e.conn }).workflow.getHandle(job).fetchHistory();
  const failed = (history.events ?? []).map((e) => e.activityTaskFailedEventAttributes?.failure?.cause?.message ?? e.activityTaskFailedEventAttributes?.failure?.message);
  expect(failed).toContain('disk full');

  // The disk is freed: the next recheck passes and b is admitted into a new round, at no restart.
  const freed = Date.now();
  rmSync(flag);
  const back = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2, 60_000);
  const backMs = Date.now() - freed;
  expect(back.unhealthy).toBeUndefined();
  expect(back.nodes.filter((n) => n.state === 'running').map((n) => n.nodeId).sort()).toEqual(['health-a', 'health-b']);
  expect(back.restarts).toBe(0);
  console.log(`health-b back in a round ${backMs} ms after its check passed (recheck every 10 s)`);
  finish(out);
  expect(await Promise.all(e2e.agents.slice(-2).map((a) => a.exited))).toEqual([0, 0]);
});

test('a one-node job whose node fails its health check fails with "no usable node" and exit code 3 within unusable_timeout', async () => {
  const out = dir('unusable');
  const flag = path.join(out, 'sick');
  writeFileSync(flag, '');
  const job = uniqueJobId('unusable');
  const started = Date.now();
  const agent = startAgent(testAddress(), 'unusable-a', ['--health-check', checkScript(out, flag), '--nnodes', '1', '--max-restarts', '3', '--rdzv-id', job, ...RDZV, WORKER, '--out', out]);
  e2e.agents.push(agent);

  const waiting = await waitFor('the job to say it has no usable node', async () => {
    const s = await status(e2e.conn, job).catch(() => null);
    return s?.unusable ? s : null;
  }, 60_000, 100);
  expect(waiting.state).toBe('waiting');
  expect(waiting.unusable?.reason).toBe('no usable node: unusable-a failing its health check: "disk full"');
  const shown = await runTelastic(['status', job, '--address', testAddress()]);
  expect(shown.stdout.split('\n')[0]).toMatch(/^job .*: no usable node: unusable-a failing its health check: "disk full" \(the job fails in \d+s unless one becomes usable\)$/);

  expect(await agent.exited).toBe(3);
  const tookMs = Date.now() - started;
  expect(agent.output()).toContain(`no usable node: unusable-a failing its health check: "disk full" for ${UNUSABLE_S}s (unusable_timeout)`);
  const s = await status(e2e.conn, job);
  expect(s).toMatchObject({ state: 'failed', restarts: 0 });
  // Well within join_timeout (120 s): the bound is unusable_timeout after the check failed.
  expect(tookMs).toBeLessThan(60_000);
  console.log(`one-node job with a failing health check: exit 3 after ${tookMs} ms (unusable_timeout ${UNUSABLE_S} s)`);
});

test('a one-node job whose node crash-looped into quarantine fails with "no usable node" and exit code 3, restarts left', async () => {
  const job = uniqueJobId('quarantined');
  const queue = `tq-${job}`;
  const env = { DATABASE_URL: postgres.db.url, TELASTIC_QUARANTINE_AFTER: '2', TELASTIC_LEDGER: undefined };
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], env);
  e2e.agents.push(controller);
  await waitFor('the ledger migrated', async () => (await postgres.pool.query("SELECT to_regclass('quarantine') AS t")).rows[0].t !== null, 30_000);
  const out = dir('quarantined');
  const started = Date.now();
  const agent = startAgent(testAddress(), 'quarantined-a', ['--nnodes', '1', '--max-restarts', '9', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...RDZV, WORKER, '--out', out, '--crash-rank', '0', '--crash-times', '99']);
  e2e.agents.push(agent);

  expect(await agent.exited).toBe(3);
  const tookMs = Date.now() - started;
  expect(agent.output()).toMatch(/no usable node: quarantined-a quarantined \(\d+ failures in 1h00m \(1 job\); last: .*\) for 4s \(unusable_timeout\)/);
  const s = await status(e2e.conn, job);
  expect(s.state).toBe('failed');
  expect(s.restarts).toBeLessThan(9);
  console.log(`crash-looping one-node job: quarantined and failed (exit 3) after ${tookMs} ms, ${s.restarts} restart(s) of 9 used`);
  controller.proc.kill('SIGTERM');
  await controller.exited;
});

test('health check failures count toward quarantine', async () => {
  const job = uniqueJobId('hcq');
  const queue = `tq-${job}`;
  const env = { DATABASE_URL: postgres.db.url, TELASTIC_QUARANTINE_AFTER: '1', TELASTIC_LEDGER: undefined };
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], env);
  e2e.agents.push(controller);
  await waitFor('the ledger migrated', async () => (await postgres.pool.query("SELECT to_regclass('quarantine') AS t")).rows[0].t !== null, 30_000);
  const out = dir('hcq');
  const flag = path.join(out, 'sick');
  writeFileSync(flag, '');
  const args = ['--nnodes', '1:2', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...RDZV, WORKER, '--out', out];
  const pair = [startAgent(testAddress(), 'hcq-a', args), startAgent(testAddress(), 'hcq-b', ['--health-check', checkScript(out, flag), ...args])];
  e2e.agents.push(...pair);

  const s = await waitForRound(e2e.conn, job, (x) => !!x.quarantined?.length, 90_000);
  expect(s.quarantined).toEqual([{ nodeId: 'hcq-b', reason: expect.stringMatching(/^1 failures in 1h00m \(1 job\); last: health check failed: disk full$/) }]);
  expect(s.nodes.find((n) => n.nodeId === 'hcq-b')?.state).toBe('quarantined');
  const rows = await postgres.pool.query('SELECT node_id, message FROM failures WHERE job_id = $1', [job]);
  expect(rows.rows).toEqual([{ node_id: 'hcq-b', message: 'health check failed: disk full' }]);
  finish(out);
  expect(await Promise.all(pair.map((a) => a.exited))).toEqual([0, 0]);
  controller.proc.kill('SIGTERM');
  await controller.exited;
});

test('a pool agent runs its operator\'s health check on a submitted job: the node is kept out, then comes back', async () => {
  const out = dir('health-pool');
  const flag = path.join(out, 'sick');
  writeFileSync(flag, '');
  const pool = testPool('health-pool', e2e.agents, [path.dirname(WORKER)]);
  pool.controller();
  pool.agent('hp-ok', ['--nproc', '1']);
  pool.agent('hp-sick', ['--nproc', '1', '--health-check', checkScript(out, flag)]);
  await waitFor('2 free nodes', async () => Object.values(owners(await poolState(e2e.conn, pool.name))).filter((o) => o === 'free').length === 2, 60_000);
  // The submission says nothing about health checks: the agent's own flag decides.
  const job = await submitJob({ connection: e2e.conn, taskQueue: pool.taskQueue }, {
    jobId: uniqueJobId('health-pool'), pool: pool.name, minNodes: 1, maxNodes: 2, nprocPerNode: 1, maxRestarts: 0,
    entrypoint: { script: WORKER, args: ['--out', out] }, rdzv: { heartbeatTimeoutMs: 3000, lastCallTimeoutMs: 1000, joinTimeoutMs: 60_000, prepareTimeoutMs: 3000 }, shutdownTimeoutMs: 3000,
  });
  const kept = await waitForRound(e2e.conn, job.workflowId, (s) => s.worldSize === 1 && !!s.unhealthy?.length, 90_000);
  expect(kept.unhealthy).toEqual([{ nodeId: 'hp-sick', reason: 'disk full' }]);
  expect(kept.nodes.find((n) => n.nodeId === 'hp-ok')?.state).toBe('running');
  // Kept by the job while it is out (not handed back to the pool to be granted again).
  expect(owners(await poolState(e2e.conn, pool.name))['hp-sick']).toBe(job.workflowId);
  rmSync(flag);
  const back = await waitForRound(e2e.conn, job.workflowId, (s) => s.worldSize === 2, 60_000);
  expect(back.restarts).toBe(0);
  finish(out);
  await waitFor('the pool job to succeed', async () => (await status(e2e.conn, job.workflowId)).state === 'succeeded', 60_000);
});
