/**
 * Workers the agent cannot end do not wedge the job. Two real agents; every worker ignores
 * SIGTERM, and node uk-b's holds a grandchild in a frozen cgroup v1 (state D: SIGKILL does not
 * end it). uk-a's worker crashes: the round ends, uk-b's workers are SIGKILLed after the shutdown
 * timeout, the frozen one survives, and uk-b's next prepare reports it. The job takes uk-b out,
 * blames it (status, ledger; quarantine counts it) and runs on with uk-a; uk-b's agent exits 1
 * with the line that names the pid. The cgroup is thawed and removed after the test, also on failure.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { jobTimeline } from '../../src/ledger/store';
import { checkQuarantine } from '../../src/ledger/quarantine';
import { createFreezer, type Freezer } from '../../test-support/freezer';
import { testAddress } from '../setup/temporal';
import { postgresPerFile } from '../setup/postgres';
import { WORKER, e2eSuite, finish, startAgent, startTelastic, status, tmpDir, uniqueJobId, waitFor, waitForRound } from './harness';
import { alive } from '../agent/helpers';

const e2e = e2eSuite();
const postgres = postgresPerFile({ max: 2 });
// FAST_RDZV's timings: a 3 s shutdown timeout, so a process is given up on 5 s after SIGKILL.
const RDZV = ['--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=1,join_timeout=60,prepare_timeout=3', '--shutdown-timeout', '3', '--monitor-interval', '0.1'];

let freezer: Freezer | null = null;
afterEach(async () => {
  await freezer?.remove();
  freezer = null;
});

test('a node whose worker survives SIGKILL is taken out with its pid named; the job runs on without it', async () => {
  freezer = createFreezer('e2e');
  const job = uniqueJobId('unkillable');
  const queue = `tq-${job}`;
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], { DATABASE_URL: postgres.db.url, TELASTIC_LEDGER: undefined });
  e2e.agents.push(controller);
  await waitFor('the ledger migrated', async () => (await postgres.pool.query("SELECT to_regclass('failures') AS t")).rows[0].t !== null, 30_000);
  const out = tmpDir('unkillable');
  const args = ['--nnodes', '1:2', '--nproc-per-node', '1', '--max-restarts', '3', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...RDZV,
    WORKER, '--out', out, '--ignore-sigterm', '--freeze-child-on', 'uk-b', '--freezer', freezer.dir, '--crash-file'];
  const [a, b] = ['uk-a', 'uk-b'].map((n) => startAgent(testAddress(), n, args));
  e2e.agents.push(a, b);

  const both = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  const frozenFile = await waitFor('uk-b froze its grandchild', () => readdirSync(out).find((f) => f.startsWith(`frozen.${both.round}.uk-b.`)), 30_000);
  const held = Number(readFileSync(path.join(out, frozenFile), 'utf8'));
  expect(freezer.tasks()).toEqual([held]);

  const crashedAt = Date.now();
  writeFileSync(path.join(out, 'crash.uk-a'), '');
  const line = `worker ${held} did not exit 5 s after SIGKILL (state D)`;
  const alone = await waitForRound(e2e.conn, job, (s) => s.worldSize === 1 && s.round > both.round, 60_000);
  const tookMs = Date.now() - crashedAt;
  expect(existsSync(path.join(out, 'crash.uk-a'))).toBe(false);
  // The round ended and the next formed: 3 s SIGTERM grace + 5 s kill wait + prepare, no more.
  expect(tookMs).toBeLessThan(30_000);
  expect(alone.nodes.find((n) => n.nodeId === 'uk-b')?.state).toBe('lost');
  expect(alone.nodes.find((n) => n.nodeId === 'uk-a')?.state).toBe('running');
  expect(alone.lastFailure).toEqual({ nodeId: 'uk-b', rank: null, exitCode: null, signal: null, message: line });
  // Taken out, uk-b's agent does not join again: it exits with the line that names the pid.
  expect(await b.exited).toBe(1);
  expect(b.output()).toContain(`telastic: node uk-b: ${line}`);
  expect(alive(held)).toBe(true); // really unkillable: only the thaw below ends it

  finish(out);
  expect(await a.exited).toBe(0);
  expect(await status(e2e.conn, job)).toMatchObject({ state: 'succeeded', restarts: 1 });

  // The ledger blames uk-b with the same line, and quarantine counts that failure.
  const t = await waitFor('the job recorded to its end', async () => {
    const tl = await jobTimeline(postgres.pool, job);
    return tl.job?.state === 'succeeded' ? tl : null;
  }, 60_000);
  expect(t.failures).toEqual([expect.objectContaining({ nodeId: 'uk-b', rank: null, message: line })]);
  expect(t.nodeEvents.some((e) => e.nodeId === 'uk-b' && e.event === 'lost')).toBe(true);
  const q = await checkQuarantine(postgres.pool, ['uk-b', 'uk-a'], { failures: 1, windowMs: 3_600_000 }, Date.now());
  expect(q).toEqual([{ nodeId: 'uk-b', reason: expect.stringContaining(line) }]);
  console.log(`unkillable e2e: crash to the next round without uk-b: ${tookMs} ms`);

  controller.proc.kill('SIGTERM');
  expect(await controller.exited).toBe(0);
});
