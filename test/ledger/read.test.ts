/**
 * The ledger's read side end to end: whole jobs written with writeRecords into a throwaway
 * PostgreSQL 15, then the real CLI (`node bin/telastic.js`, the build `npm test` makes) run as a
 * child process with DATABASE_URL: `history`, `report --html`, `nodes`, `nodes --release`, and
 * the one-line errors. No Temporal is involved.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { BIN, ROOT } from '../../test-support/agents';
import { migrate } from '../../src/ledger/migrate';
import { nodeSummaries, releaseNode } from '../../src/ledger/nodes';
import { jobTimeline, writeRecords, type LedgerRecord } from '../../src/ledger/store';
import { freePort } from '../../src/temporal/ports';
import { startPostgres, type TestPostgres } from '../setup/postgres';

let db: TestPostgres;
let pool: pg.Pool;
let dir: string;
const children = new Set<ChildProcess>();

/** The first job starts two hours ago, so its failures fall inside a 24 h window. */
const T0 = Date.now() - 2 * 3600_000;
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const members = (...ids: string[]) => ids.map((nodeId, groupRank) => ({ nodeId, groupRank, address: `10.0.0.${groupRank + 1}` }));

/**
 * 100 s: round 1 (10–40 s) ends with rank 3 on b exiting 1, round 2 (50–70 s) with b lost, round 3
 * (72–98 s) succeeds: 30 + 20 + 26 = 76 s productive, goodput 76.0%.
 */
function wholeJob(jobId: string): LedgerRecord[] {
  const spec = { jobId, minNodes: 1, maxNodes: 2, nprocPerNode: 2, maxRestarts: 3, entrypoint: { script: 'train.py', args: ['--note', '<script>alert(1)</script>'] } };
  let seq = 0;
  const r = <T extends object>(s: number, record: T) => ({ ...record, jobId, seq: ++seq, at: at(s) });
  return [
    r(0, { kind: 'job', spec, state: 'waiting' }),
    r(10, { kind: 'nodeEvent', nodeId: 'a', event: 'join' }),
    r(10, { kind: 'nodeEvent', nodeId: 'b', event: 'join' }),
    r(10, { kind: 'roundStarted', round: 1, members: members('a', 'b'), worldSize: 4 }),
    r(40, { kind: 'roundEnded', round: 1, reason: 'failure: boom <script>' }),
    r(40, { kind: 'failure', round: 1, nodeId: 'b', rank: 3, exitCode: 1, signal: null, message: 'boom <script>' }),
    r(45, { kind: 'checkpoint', path: '/ckpt/step-100', step: 100, chosenForRound: 2 }),
    r(50, { kind: 'roundStarted', round: 2, members: members('a', 'b'), worldSize: 4 }),
    r(70, { kind: 'roundEnded', round: 2, reason: 'failure: node lost: missed its heartbeat' }),
    r(70, { kind: 'failure', round: 2, nodeId: 'b', rank: null, exitCode: null, signal: null, message: 'node lost: missed its heartbeat' }),
    r(70, { kind: 'nodeEvent', nodeId: 'b', event: 'lost', cause: 'lost' }),
    r(72, { kind: 'roundStarted', round: 3, members: members('a'), worldSize: 2 }),
    r(98, { kind: 'roundEnded', round: 3, reason: 'succeeded' }),
    r(100, { kind: 'jobEnded', state: 'succeeded' }),
  ] as LedgerRecord[];
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `telastic ARGS…` with the test's ledger (or `env` instead); ended after 30 s at the latest. */
function telastic(args: string[], env: NodeJS.ProcessEnv = { DATABASE_URL: db.url }): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { cwd: dir, env: { PATH: process.env.PATH, ...env }, timeout: 30_000, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      children.delete(child);
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    children.add(child);
  });
}

const lines = (s: string) => s.trim().split('\n').filter(Boolean);

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'lib', 'src', 'cli', 'ledger-commands.js'))) throw new Error('lib/ is not built: run `npm run build` (npm test does) before this test');
  dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-read-'));
  db = await startPostgres();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined);
  await migrate(pool);
  await writeRecords(pool, wholeJob('read-1'));
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await pool?.end();
  await db?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('telastic history', () => {
  test('prints the rounds, failures, checkpoint and node events in order', async () => {
    const r = await telastic(['history', 'read-1']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const out = lines(r.stdout);
    expect(out[0]).toBe('job read-1 · succeeded');
    expect(out[2]).toBe('spec    train.py --note "<script>alert(1)</script>" · nnodes 1:2 · nproc-per-node 2 · max-restarts 3');
    expect(out.slice(3).map((l) => l.trim())).toEqual([
      '+10.0s  node a joined',
      '+10.0s  node b joined',
      '+10.0s  round 1 started · world size 4 · nodes (group rank): a (0), b (1)',
      '+40.0s  round 1 ended after 30.0s: failure: boom <script>',
      '+40.0s  round 1 failure: node b rank 3 exit 1: boom <script>',
      '+45.0s  checkpoint /ckpt/step-100 (step 100), chosen for round 2',
      '+50.0s  round 2 started · world size 4 · nodes (group rank): a (0), b (1)',
      '+1m10.0s  round 2 ended after 20.0s: failure: node lost: missed its heartbeat',
      '+1m10.0s  round 2 failure: node b lost: missed its heartbeat',
      '+1m10.0s  node b lost',
      '+1m12.0s  round 3 started · world size 2 · nodes (group rank): a (0)',
      '+1m38.0s  round 3 ended after 26.0s: succeeded',
      '+1m40.0s  job succeeded',
    ]);
  });

  test('--json prints the timeline', async () => {
    const r = await telastic(['history', 'read-1', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(await jobTimeline(pool, 'read-1'));
  });

  test('a job the ledger does not know is one line, exit 1', async () => {
    const r = await telastic(['history', 'no-such-job']);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(lines(r.stderr)).toEqual(['telastic: job no-such-job: not in the ledger (DATABASE_URL)']);
  });
});

describe('telastic report', () => {
  test('--html writes one page with the chart and the goodput, and prints the figures', async () => {
    const file = path.join(dir, 'report.html');
    const r = await telastic(['report', 'read-1', '--html', file]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(lines(r.stdout)).toEqual([
      `job read-1 · succeeded · ${at(0)} → ${at(100)}`,
      'goodput         76.0%',
      'wall time       1m40s',
      'productive time 1m16s',
      'restarts        2 (1 worker failure, 1 node lost)',
      'MTTR            6.0s (mean of 2 recoveries)',
      `report written to ${file}`,
    ]);
    const html = readFileSync(file, 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('<div class="value">76.0%</div>');
    expect(html).not.toContain('<script');
  });

  test('without --html prints the figures only; --json prints them as JSON', async () => {
    const text = await telastic(['report', 'read-1']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('goodput         76.0%');
    expect(text.stdout).not.toContain('report written');
    const json = await telastic(['report', 'read-1', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ wallMs: 100_000, productiveMs: 76_000, restarts: 2, mttrMs: 6_000 });
  });

  test('a job the ledger does not know writes no file', async () => {
    const file = path.join(dir, 'none.html');
    const r = await telastic(['report', 'nope', '--html', file]);
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual(['telastic: job nope: not in the ledger (DATABASE_URL)']);
    expect(existsSync(file)).toBe(false);
  });
});

describe('telastic nodes', () => {
  test('lists the failing node with its failures and last failure', async () => {
    const r = await telastic(['nodes']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const out = lines(r.stdout);
    expect(out[0]).toMatch(/^node +failures +last 24h +state +last failure$/);
    expect(out[1]).toMatch(new RegExp(`^b +2 +2 +ok +${at(70)} job read-1 round 2: node b lost: missed its heartbeat$`));
    expect(out).toHaveLength(2); // a never failed
    const short = JSON.parse((await telastic(['nodes', '--json', '--window', '1h'])).stdout);
    expect(short).toMatchObject({ windowMs: 3600_000, nodes: [{ nodeId: 'b', failures: 2, recentFailures: 0 }] });
  });

  test('--release ends a quarantine: the node shows released and its earlier failures stop counting', async () => {
    await pool.query("INSERT INTO quarantine (node_id, since, reason) VALUES ('b', $1, '2 failures within 24h')", [at(71)]);
    const before = await telastic(['nodes']);
    expect(before.stdout).toContain(`quarantined since ${at(71)}: 2 failures within 24h`);
    expect(lines(before.stdout)[1]).toMatch(/^b +2 +2 +quarantined /);

    const r = await telastic(['nodes', '--release', 'b']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(lines(r.stdout)).toEqual(['node b: released from quarantine']);
    const after = JSON.parse((await telastic(['nodes', '--json'])).stdout);
    expect(after.nodes).toEqual([expect.objectContaining({ nodeId: 'b', failures: 2, recentFailures: 0, quarantined: null, releasedAt: expect.any(String) })]);
    expect(lines((await telastic(['nodes'])).stdout)[1]).toMatch(/^b +2 +0 +released /);

    const again = await telastic(['nodes', '--release', 'b']);
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(lines(again.stderr)).toEqual(['telastic: node b: not quarantined (DATABASE_URL)']);
  });

  test('releasing a node that is not quarantined is one line, exit 1', async () => {
    const r = await telastic(['nodes', '--release', 'a']);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(lines(r.stderr)).toEqual(['telastic: node a: not quarantined (DATABASE_URL)']);
  });

  test('a failure after the release counts again; outside the window it does not', async () => {
    const now = new Date();
    await pool.query("INSERT INTO quarantine (node_id, since, reason) VALUES ('c', $1, 'test')", [new Date(now.getTime() - 3 * 3600_000)]);
    expect(await releaseNode(pool, 'c', new Date(now.getTime() - 30 * 60_000))).toBe(true);
    expect(await releaseNode(pool, 'c', now)).toBe(false);
    const failure = (seq: number, minutesAgo: number) => ({
      kind: 'failure', jobId: 'read-2', seq, round: 1, nodeId: 'c', rank: 0, exitCode: 1, signal: null, message: `m${seq}`, at: new Date(now.getTime() - minutesAgo * 60_000).toISOString(),
    }) as LedgerRecord;
    await writeRecords(pool, [failure(1, 60 * 30), failure(2, 60), failure(3, 10)]);
    const c = (await nodeSummaries(pool, 24 * 3600_000, now)).find((n) => n.nodeId === 'c');
    expect(c).toMatchObject({ failures: 3, recentFailures: 1, quarantined: null, lastFailure: { jobId: 'read-2', message: 'm3' } });
    expect((await nodeSummaries(pool, 5 * 60_000, now)).find((n) => n.nodeId === 'c')?.recentFailures).toBe(0);
  });

  test('a bad --window is one line, exit 2', async () => {
    const r = await telastic(['nodes', '--window', 'soon']);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toEqual(['telastic: --window soon: expected a duration such as 90s, 30m, 24h or 7d']);
  });
});

describe('without a ledger', () => {
  test('no DATABASE_URL and no embedded ledger here: one line naming both, exit 1', async () => {
    const r = await telastic(['history', 'read-1'], {});
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual(['telastic: no ledger at .telastic/ledger: set DATABASE_URL, or run telastic dev / telastic controller here first']);
  });

  test('a database that does not answer: one line, exit 1', async () => {
    const r = await telastic(['nodes'], { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/postgres` });
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([expect.stringMatching(/^telastic: ledger unreachable: .*ECONNREFUSED/)]);
  });
});
