/**
 * A sealed pool: its controller, its agents and the submitting client hold the key. A job
 * submitted to it runs to success, and neither its history nor the pool's (as `temporal workflow
 * show -o json` prints them) holds its script path, arguments or the nodes' addresses. An agent
 * started without the key stops with one line and never becomes one of the pool's nodes.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getJobStatus } from '../../src/client/api';
import { getPoolStatus } from '../../src/client/pool';
import { poolWorkflowId } from '../../src/pool/state';
import { sealedDataConverter } from '../../src';
import { keyId } from '../../src/temporal/sealing';
import { testAddress } from '../setup/temporal';
import { shownHistory, texts, unsealedPayloads } from './history';
import { WORKER, e2eSuite, finish, owners, recordedPids, startTelastic, testPool, tmpDir, uniqueJobId, waitFor } from './harness';

const e2e = e2eSuite();

test('a job submitted to a sealed pool runs; neither its history nor the pool\'s shows its script, arguments or node addresses; a keyless agent stops in one line, outside the pool', async () => {
  const dir = tmpDir('pool-sealed');
  const key = randomBytes(32);
  const keyFile = path.join(dir, 'pool.key');
  writeFileSync(keyFile, `${key.toString('base64')}\n`);
  const script = path.join(dir, 'secret-pool-script.py');
  copyFileSync(WORKER, script);
  const out = path.join(dir, 'secret-pool-out');
  const pool = testPool('pool-sealed', e2e.agents, [dir]);
  const keyEnv = { TELASTIC_ENCRYPTION_KEY_FILE: keyFile };
  const ADDRESSES = ['127.0.0.43', '127.0.0.44'];
  const nodes = ['sealed-n1', 'sealed-n2'];
  // The flag for the controller, the variable for the agents: both are read.
  const controller = startTelastic(`${pool.name}-controller`, ['controller', '--address', testAddress(), '--task-queue', pool.taskQueue, '--encryption-key-file', keyFile], { TELASTIC_ENCRYPTION_KEY_FILE: '' });
  e2e.agents.push(controller);
  const agents = nodes.map((n, i) => pool.agent(n, ['--nproc', '1', '--local-addr', ADDRESSES[i]], keyEnv));
  const client = { connection: e2e.conn, taskQueue: pool.taskQueue, dataConverter: await sealedDataConverter([keyFile]) };
  const query = <T>(fn: () => Promise<T>) => e2e.conn.withDeadline(Date.now() + 3000, fn);
  await waitFor('2 free nodes', async () => Object.values(owners(await query(() => getPoolStatus(client, pool.name)))).filter((o) => o === 'free').length === 2);

  // `telastic submit --wait` with the key: prints the job id, then follows the job to its end.
  const job = uniqueJobId('pool-sealed-job');
  const submit = startTelastic(`${job}-submit`, [
    'submit', '--wait', '--pool', pool.name, '--nnodes', '1:3', '--nproc-per-node', '1', '--rdzv-id', job,
    '--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=1,join_timeout=60,prepare_timeout=3', '--shutdown-timeout', '3',
    '--address', testAddress(), '--task-queue', pool.taskQueue, '--encryption-key-file', keyFile, script, '--out', out,
  ], { TELASTIC_ENCRYPTION_KEY_FILE: '' });
  e2e.agents.push(submit);
  const running = await waitFor('the sealed job on both nodes', async () => {
    const s = await query(() => getJobStatus(client, job));
    return s.state === 'running' && s.worldSize === 2 ? s : null;
  });
  expect(running.nodes.map((n) => n.address).sort()).toEqual(ADDRESSES);
  await waitFor('its 2 workers', () => recordedPids(out, running.round).length === 2);

  // An agent without the key, while the job (1:3) could still grow: one line, exit 1, and the
  // pool never counts it, so the job never re-forms for it.
  const keyless = pool.agent('sealed-keyless', ['--nproc', '1', '--local-addr', '127.0.0.45'], { TELASTIC_ENCRYPTION_KEY_FILE: '' });
  expect(await keyless.exited).toBe(1);
  expect(keyless.output()).toContain(`telastic agent: pool ${pool.name}: payload sealed with key ${keyId(key)}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (none set)\n`);
  expect(keyless.output()).not.toMatch(/^\s+at /m);
  const p = await query(() => getPoolStatus(client, pool.name));
  expect(owners(p)).toEqual({ 'sealed-n1': job, 'sealed-n2': job });
  const after = await query(() => getJobStatus(client, job));
  expect({ state: after.state, round: after.round, restarts: after.restarts, worldSize: after.worldSize }).toEqual({ state: 'running', round: running.round, restarts: 0, worldSize: 2 });

  finish(out);
  expect(await submit.exited).toBe(0);
  expect(submit.output()).toContain(`${job}\n`);
  expect(submit.output()).toContain(`telastic: job ${job} succeeded`);
  for (const a of agents) expect(a.proc.exitCode).toBeNull(); // pool agents outlive their jobs

  const secrets = [script, 'secret-pool-script', out, 'secret-pool-out', ...ADDRESSES, '127.0.0.45'];
  for (const id of [job, poolWorkflowId(pool.name)]) {
    const history = await shownHistory(id);
    expect(history.events.length).toBeGreaterThan(5);
    const all = texts(history).join('\n');
    for (const secret of secrets) expect({ id, leaked: all.includes(secret) ? secret : null }).toEqual({ id, leaked: null });
    expect({ id, unsealed: unsealedPayloads(history) }).toEqual({ id, unsealed: [] });
  }
  // Keyed processes refused no payload of their own (none the SDK or the server wrote passes unsealed).
  for (const p of [controller, ...agents]) expect(p.output().split('\n').filter((l) => l.includes('refused'))).toEqual([]);
});
