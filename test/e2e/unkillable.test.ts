/**
 * Workers the agent cannot end do not wedge the job. Two real agents, a and b; every worker
 * ignores SIGTERM (it is SIGKILLed after the shutdown timeout), and b's holds a grandchild in a
 * frozen cgroup v1 (state D: SIGKILL does not end it). A worker crashes: the round ends, the
 * frozen process survives its SIGKILL, and b reports it. The job takes b out, blames it (status,
 * ledger; quarantine counts it) and runs on with a; b's agent exits 1 with the line that names
 * the pid. The cgroup is thawed and removed after each test, also on failure.
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

/**
 * `crashOn` ends the round: the other node's worker (`a`: the round is cancelled on b, whose next
 * prepare reports its stuck process) or b's own (`b`: b's runWorkers reports it).
 */
async function scenario(name: string, crashOn: 'a' | 'b'): Promise<void> {
  freezer = createFreezer(name);
  const [A, B] = [`${name}-a`, `${name}-b`];
  const job = uniqueJobId(name);
  const queue = `tq-${job}`;
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue], { DATABASE_URL: postgres.db.url, TELASTIC_LEDGER: undefined });
  e2e.agents.push(controller);
  await waitFor('the ledger migrated', async () => (await postgres.pool.query("SELECT to_regclass('failures') AS t")).rows[0].t !== null, 30_000);
  const out = tmpDir(name);
  const args = ['--nnodes', '1:2', '--nproc-per-node', '1', '--max-restarts', '3', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, ...RDZV,
    WORKER, '--out', out, '--ignore-sigterm', '--freeze-child-on', B, '--freezer', freezer.dir, '--crash-file'];
  const [a, b] = [A, B].map((n) => startAgent(testAddress(), n, args));
  e2e.agents.push(a, b);

  const both = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2);
  const frozenFile = await waitFor(`${B} froze its grandchild`, () => readdirSync(out).find((f) => f.startsWith(`frozen.${both.round}.${B}.`)), 30_000);
  const held = Number(readFileSync(path.join(out, frozenFile), 'utf8'));
  expect(freezer.tasks()).toEqual([held]);

  const crashedAt = Date.now();
  const crashFile = path.join(out, `crash.${crashOn === 'a' ? A : B}`);
  writeFileSync(crashFile, '');
  const line = `worker ${held} did not exit 5 s after SIGKILL (state D)`;
  const alone = await waitForRound(e2e.conn, job, (s) => s.worldSize === 1 && s.round > both.round, 60_000);
  const tookMs = Date.now() - crashedAt;
  expect(existsSync(crashFile)).toBe(false);
  // The round ended and the next formed: 3 s SIGTERM grace + 5 s kill wait + prepare, no more.
  expect(tookMs).toBeLessThan(30_000);
  expect(alone.nodes.find((n) => n.nodeId === B)?.state).toBe('lost');
  expect(alone.nodes.find((n) => n.nodeId === A)?.state).toBe('running');
  expect(alone.lastFailure).toEqual({ nodeId: B, rank: null, exitCode: null, signal: null, message: line });
  // Taken out, b's agent does not join again: it exits with the line that names the pid.
  expect(await b.exited).toBe(1);
  expect(b.output()).toContain(`telastic: node ${B}: ${line}`);
  expect(alive(held)).toBe(true); // really unkillable: only the thaw after the test ends it

  finish(out);
  expect(await a.exited).toBe(0);
  expect(await status(e2e.conn, job)).toMatchObject({ state: 'succeeded', restarts: 1 });

  // The ledger blames b with the same line, and quarantine counts that failure.
  const t = await waitFor('the job recorded to its end', async () => {
    const tl = await jobTimeline(postgres.pool, job);
    return tl.job?.state === 'succeeded' ? tl : null;
  }, 60_000);
  expect(t.failures).toEqual([expect.objectContaining({ nodeId: B, rank: null, message: line })]);
  expect(t.nodeEvents.some((e) => e.nodeId === B && e.event === 'lost')).toBe(true);
  const q = await checkQuarantine(postgres.pool, [B, A], { failures: 1, windowMs: 3_600_000 }, Date.now());
  expect(q).toEqual([{ nodeId: B, reason: expect.stringContaining(line) }]);
  console.log(`unkillable e2e (crash on ${crashOn}): crash to the next round without ${B}: ${tookMs} ms`);

  controller.proc.kill('SIGTERM');
  expect(await controller.exited).toBe(0);
}

test('a worker crash elsewhere: the stuck node is named by its next prepare, taken out, and the job runs on', () => scenario('uka', 'a'));

test('its own worker crashes: the stuck node reports it from runWorkers, is taken out, and the job runs on', () => scenario('ukb', 'b'));
