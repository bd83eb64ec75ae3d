/** Bad input: one line naming the field and value, exit 2, nothing started, a running job untouched. */
import { Connection } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { testAddress } from '../setup/temporal';
import { BIN, FAST_RDZV, WORKER, finish, startAgent, status, stopAll, tmpDir, uniqueJobId, waitForRound, type Agent } from './harness';

function telastic(...args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, TEMPORAL_ADDRESS: testAddress() }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const lines = (s: string) => s.trim().split('\n').filter(Boolean);

test.each([
  [['--nnodes', '3:2', WORKER], '--nnodes 3:2'],
  [['--nnodes', '0', WORKER], '--nnodes 0'],
  [[], 'missing SCRIPT'],
  [['no_such_script.py'], 'SCRIPT no_such_script.py: no such file'],
  [['--frobnicate', WORKER], 'unknown option --frobnicate'],
  [['--shutdown-timeout', '-1', WORKER], '--shutdown-timeout -1'],
  [['--rdzv-conf', 'heartbeat_timeout=-5', WORKER], 'heartbeat_timeout=-5'],
  [['--rdzv-backend', 'etcd', WORKER], '--rdzv-backend etcd'],
])('telastic run %j → exit 2 naming %s', async (args, named) => {
  const r = await telastic('run', '--rdzv-id', uniqueJobId('bad'), ...args);
  expect(r.code).toBe(2);
  expect(lines(r.stderr)).toHaveLength(1);
  expect(r.stderr).toContain(named);
});

test.each([
  [['--grace', '10s'], '--grace: only with --checkpoint-first'],
  [['--checkpoint-first', '--grace', 'soon'], '--grace soon'],
])('telastic drain %j with no server → exit 2 naming %s, before connecting', async (args, named) => {
  // Port 1 answers nothing: a check made only after connecting would wait, not fail in one line.
  const r = await telastic('drain', 'job', 'node', '--address', '127.0.0.1:1', '--connect-timeout', '30', ...args);
  expect(r.code).toBe(2);
  expect(lines(r.stderr)).toHaveLength(1);
  expect(r.stderr).toContain(named);
});

describe('against a running job', () => {
  let conn: Connection;
  const agents: Agent[] = [];
  const out = tmpDir('bad-job');
  const job = uniqueJobId('bad-job');
  let round = 0;
  beforeAll(async () => {
    conn = await Connection.connect({ address: testAddress() });
    agents.push(startAgent(testAddress(), 'bad-a', ['--nnodes', '1:3', '--nproc-per-node', '2', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out]));
    round = (await waitForRound(conn, job, (s) => s.worldSize === 2)).round;
  });
  afterAll(async () => {
    finish(out);
    await stopAll(agents);
    await conn.close();
  });
  afterEach(async () => {
    // The job was not touched: same round, same members, same bounds, nothing lost.
    expect(await status(conn, job)).toMatchObject({ state: 'running', round, worldSize: 2, minNodes: 1, maxNodes: 3, restarts: 0 });
  });

  test('scale to min > max is rejected', async () => {
    const r = await telastic('scale', job, '--min', '3', '--max', '2');
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toEqual(['telastic: minNodes 3 exceeds maxNodes 2']);
  });
  test('drain of an unknown node is rejected', async () => {
    const r = await telastic('drain', job, 'ghost');
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toEqual([`telastic: node ghost is not in job ${job} (nodes: bad-a)`]);
  });
  test('a node joining with another nproc-per-node is rejected', async () => {
    const a = startAgent(testAddress(), 'bad-b', ['--nnodes', '1:3', '--nproc-per-node', '3', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out]);
    expect(await a.exited).toBe(2);
    expect(a.output()).toContain(`nproc-per-node 3 does not match job ${job} (2)`);
  });
  test('a node joining with another script is rejected', async () => {
    const a = startAgent(testAddress(), 'bad-c', ['--nnodes', '1:3', '--nproc-per-node', '2', '--rdzv-id', job, ...FAST_RDZV, BIN, '--out', out]);
    expect(await a.exited).toBe(2);
    expect(a.output()).toContain(`script ${BIN} does not match job ${job} (${WORKER})`);
  });
});
