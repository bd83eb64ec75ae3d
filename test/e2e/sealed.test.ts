/**
 * Sealed payloads end to end: a job whose agent has a key runs as usual, its history (as
 * `temporal workflow show -o json` prints it) holds none of its script path, arguments or node
 * addresses, and processes without the key, or with another one, stop with one line.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { getJobStatus } from '../../src/client/api';
import { sealedDataConverter } from '../../src'; // the public API
import { keyId } from '../../src/temporal/sealing';
import { testAddress } from '../setup/temporal';
import { shownHistory, texts, unsealedPayloads } from './history';
import { BIN, FAST_RDZV, WORKER, e2eSuite, finish, startAgent, startTelastic, tmpDir, uniqueJobId, waitFor } from './harness';

const run = promisify(execFile);
const e2e = e2eSuite();

test('a sealed job runs, leaves no script, argument or address in its history, and refuses keyless processes in one line', async () => {
  const dir = tmpDir('sealed');
  const key = randomBytes(32);
  const keyFile = path.join(dir, 'job.key');
  writeFileSync(keyFile, `${key.toString('base64')}\n`);
  const script = path.join(dir, 'secret-train-script.py');
  copyFileSync(WORKER, script);
  const out = path.join(dir, 'secret-out-dir');
  const job = uniqueJobId('sealed');
  const taskQueue = `tq-${job}`;
  const ADDRESS = '127.0.0.42';
  const args = ['--nnodes', '1:2', '--nproc-per-node', '2', '--rdzv-id', job, '--task-queue', taskQueue, '--local-addr', ADDRESS, ...FAST_RDZV, script, '--out', out];
  const keyEnv = { TELASTIC_ENCRYPTION_KEY_FILE: keyFile };
  const a = startAgent(testAddress(), 'sealed-a', args, keyEnv);
  e2e.agents.push(a);

  const client = { connection: e2e.conn, taskQueue, dataConverter: await sealedDataConverter([keyFile]) };
  const s = await waitFor('a running sealed job', async () => {
    const st = await e2e.conn.withDeadline(Date.now() + 3000, () => getJobStatus(client, job));
    return st.state === 'running' && st.worldSize === 2 ? st : null;
  });
  expect(s.nodes).toEqual([expect.objectContaining({ nodeId: 'sealed-a', address: ADDRESS })]);

  // `telastic status` with the key reads it; without it, or with another key: one line, exit 1.
  const status = (env: NodeJS.ProcessEnv) => run(process.execPath, [BIN, 'status', job, '--address', testAddress()], { env: { ...process.env, ...env } }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
  expect((await status(keyEnv)).stdout).toContain(`job ${job}: running`);
  const id = keyId(key);
  const keyless = await status({ TELASTIC_ENCRYPTION_KEY_FILE: '' });
  expect(keyless).toMatchObject({ code: 1, stdout: '', stderr: `telastic: payload sealed with key ${id}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (none set)\n` });
  const otherFile = path.join(dir, 'other.key');
  const other = randomBytes(32);
  writeFileSync(otherFile, other.toString('base64'));
  expect(await status({ TELASTIC_ENCRYPTION_KEY_FILE: otherFile })).toMatchObject({
    code: 1,
    stderr: `telastic: payload sealed with key ${id}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (it has ${keyId(other)})\n`,
  });
  const badFile = path.join(dir, 'bad.key');
  writeFileSync(badFile, 'short');
  expect(await status({ TELASTIC_ENCRYPTION_KEY_FILE: badFile })).toMatchObject({ code: 2, stderr: `telastic: TELASTIC_ENCRYPTION_KEY_FILE: ${badFile}: not a base64 key (make one with: openssl rand -base64 32)\n` });

  // A node without the key joining the job: exits non-zero with that line, no stack, no hang.
  const b = startAgent(testAddress(), 'sealed-keyless', args, { TELASTIC_ENCRYPTION_KEY_FILE: '' });
  e2e.agents.push(b);
  expect(await b.exited).toBe(1);
  expect(b.output()).toContain(`telastic: job ${job}: payload sealed with key ${id}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (none set)\n`);
  expect(b.output()).not.toMatch(/^\s+at /m);
  // It stopped before it offered itself: the job never counted on it, so no round was spent.
  const after = await e2e.conn.withDeadline(Date.now() + 3000, () => getJobStatus(client, job));
  expect({ round: after.round, restarts: after.restarts, nodes: after.nodes.map((n) => n.nodeId) }).toEqual({ round: s.round, restarts: 0, nodes: ['sealed-a'] });

  finish(out);
  expect(await a.exited).toBe(0);
  expect(a.output()).toContain(`job ${job} succeeded`);

  const history = await shownHistory(job);
  expect(history.events.length).toBeGreaterThan(10);
  const all = texts(history).join('\n');
  for (const secret of [script, 'secret-train-script', out, 'secret-out-dir', ADDRESS]) expect(all).not.toContain(secret);
  expect(unsealedPayloads(history)).toEqual([]);
  // The keyed agent refused no payload (none the SDK or the server wrote passes unsealed).
  expect(a.output().split('\n').filter((l) => l.includes('refused'))).toEqual([]);
});

test('a sealed job that fails: its agent reports the root cause; its history keeps failure messages sealed', async () => {
  const dir = tmpDir('sealed-fail');
  const keyFile = path.join(dir, 'job.key');
  writeFileSync(keyFile, randomBytes(32).toString('base64'));
  const job = uniqueJobId('sealed-fail');
  const args = ['--nnodes', '1', '--nproc-per-node', '2', '--max-restarts', '0', '--rdzv-id', job, '--task-queue', `tq-${job}`, ...FAST_RDZV, WORKER, '--out', path.join(dir, 'out'), '--crash-rank', '1', '--crash-times', '5'];
  const a = startAgent(testAddress(), 'sealed-fail-a', args, { TELASTIC_ENCRYPTION_KEY_FILE: keyFile });
  e2e.agents.push(a);
  expect(await a.exited).toBe(1);
  expect(a.output()).toMatch(new RegExp(`job ${job} failed.*rank 1.*exit code 3.*RuntimeError: rank 1 crashed on purpose`));

  const all = texts(await shownHistory(job)).join('\n');
  expect(all).toContain('Encoded failure');
  expect(all).not.toContain('crashed on purpose');
  expect(all).not.toContain('exit code 3');
});

test('a controller without the key stops with one line at a sealed job\'s first task, rather than fail it for ever', async () => {
  const dir = tmpDir('sealed-ctl');
  const keyFile = path.join(dir, 'job.key');
  const key = randomBytes(32);
  writeFileSync(keyFile, key.toString('base64'));
  const job = uniqueJobId('sealed-ctl');
  const taskQueue = `tq-${job}`;
  // The job's only node hosts no coordinator: its workflow tasks wait for a controller.
  const a = startAgent(testAddress(), 'sealed-ctl-a', ['--nnodes', '1', '--rdzv-id', job, '--task-queue', taskQueue, '--no-coordinator', ...FAST_RDZV, WORKER, '--out', path.join(dir, 'out')], { TELASTIC_ENCRYPTION_KEY_FILE: keyFile });
  e2e.agents.push(a);
  await waitFor('the job started', () => a.output().includes('join sent'));
  const ctl = startTelastic('sealed-ctl-controller', ['controller', '--address', testAddress(), '--task-queue', taskQueue], { TELASTIC_ENCRYPTION_KEY_FILE: '' });
  e2e.agents.push(ctl);
  expect(await ctl.exited).toBe(1);
  expect(ctl.output()).toContain(`telastic controller: payload sealed with key ${keyId(key)}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (none set)\n`);
  expect(ctl.output()).not.toMatch(/^\s+at /m);
});
