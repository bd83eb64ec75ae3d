/**
 * Hostile writers against sealed jobs (issue 17, audit findings 7 and 8), through a real Temporal
 * server and real `telastic run` agents with a key:
 * - a keyless client's unsealed update and signal to a keyed job are refused, the job unchanged;
 * - a sealed update lifted from one namespace's history, sent to a job in another namespace
 *   sealed with the same key, does not open there;
 * - a keyed job's history names no host in its identities;
 * - `telastic status` of a job whose worker failed with terminal escapes in its message prints
 *   none of them raw.
 */
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { getJobStatus } from '../../../src/client/api';
import { sealedDataConverter } from '../../../src';
import { startPrivateServer, stopPrivateServers, testAddress } from '../../setup/temporal';
import { nodeQueue } from '../../../activities/types';
import { shownHistory } from '../history';
import { startAttacker } from './attacker';
import { BIN, FAST_RDZV, WORKER, e2eSuite, finish, startAgent, tmpDir, uniqueJobId, waitFor } from '../harness';

const run = promisify(execFile);
// eslint-disable-next-line no-control-regex -- the very characters the tests look for
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const e2e = e2eSuite();
afterAll(stopPrivateServers);

const KEY = randomBytes(32);
let keyFile = '';
beforeAll(() => {
  keyFile = path.join(tmpDir('hostile-seal-key'), 'job.key');
  writeFileSync(keyFile, KEY.toString('base64'));
});

/** A keyed one-node job (1:2 nodes) running on `address` in `namespace`, and its out dir. */
async function keyedJob(name: string, conn: Connection, address: string, namespace = 'default') {
  const job = uniqueJobId(name);
  const out = tmpDir(name);
  const args = ['--nnodes', '1:2', '--nproc-per-node', '1', '--rdzv-id', job, '--task-queue', `tq-${job}`, ...FAST_RDZV, WORKER, '--out', out];
  const agent = startAgent(address, `${name}-a`, args, { TELASTIC_ENCRYPTION_KEY_FILE: keyFile, TEMPORAL_NAMESPACE: namespace });
  e2e.agents.push(agent);
  const keyed = { connection: conn, namespace, dataConverter: await sealedDataConverter([keyFile]) };
  const status = () => conn.withDeadline(Date.now() + 3000, () => getJobStatus(keyed, job));
  const first = await waitFor(`${job} running`, async () => ((await status()).state === 'running' ? status() : null));
  return { job, out, agent, keyed, status, first };
}

/** The gist of a job's status that an accepted drain or scale would change. */
const gist = (s: { round: number; minNodes: number; maxNodes: number; nodes: { nodeId: string; state: string }[] }) => ({
  round: s.round,
  nodes: `${s.minNodes}:${s.maxNodes}`,
  members: s.nodes.map((n) => `${n.nodeId} ${n.state}`),
});

/** What an update did: its answer, or the one line it was refused with. */
async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return { accepted: await p };
  } catch (err) {
    return { refused: err instanceof WorkflowUpdateFailedError ? (err.cause?.message ?? err.message) : String(err) };
  }
}

/** A client whose every payload is `payload`, as it was lifted, byte for byte. */
function replaying(connection: Connection, namespace: string, payload: Payload): Client {
  return new Client({ connection, namespace, dataConverter: { payloadCodecs: [{ encode: async (ps) => ps.map(() => payload), decode: async (ps) => ps }] } });
}

let a: Awaited<ReturnType<typeof keyedJob>>;
beforeAll(async () => {
  a = await keyedJob('seal-a', e2e.conn, testAddress());
});

test("a keyless writer's own workflow scheduling an activity on a keyed agent's node queue: refused before it runs", async () => {
  const attacker = await startAttacker(testAddress());
  try {
    const lines = () => a.agent.output().split('\n');
    const refusals = () => lines().filter((l) => l.startsWith('telastic: unsealed payload'));
    const earlier = refusals().length; // none yet: this is the job's first attack
    // signalWorkers of a round that is not running signals nothing, but logs its reason. (The
    // attacker's workflow never learns the outcome: the agent's answer is sealed.)
    void attacker.run(nodeQueue('seal-a-a'), 'signalWorkers', { jobId: a.job, round: 999, reason: 'hostile-probe' }, 30_000).catch(() => undefined);
    const ran = () => lines().find((l) => l.includes('checkpoint signal sent'));
    const seen = await waitFor('the agent ran or refused it', () => ran() ?? refusals()[earlier], 60_000);
    console.log('agent:', seen);
    expect(seen).toMatch(/^telastic: unsealed payload \(json\/plain\) refused/);
    expect(ran()).toBeUndefined();
  } finally {
    await Promise.race([attacker.close(), new Promise((r) => setTimeout(r, 5000))]);
  }
});

test('a keyed job refuses a keyless update and signal and stays as it was', async () => {
  const before = gist(a.first);
  // A keyless writer (anyone who may write to the namespace): an unsealed scale and drain.
  const keyless = new Client({ connection: e2e.conn }).workflow.getHandle(a.job);
  const forged = await outcome(keyless.executeUpdate('scale', { args: [{ maxNodes: 1 }] }));
  await keyless.signal('drainNode', { nodeId: 'seal-a-a' });
  // The owner's sealed update, after the signal: once it is answered, the signal was handled.
  const owner = new Client(a.keyed).workflow.getHandle(a.job);
  const sealed = await outcome(owner.executeUpdate('scale', { args: [{ maxNodes: 3 }] }));
  const after = gist(await a.status());
  console.log('keyless update:', JSON.stringify(forged), '| owner update:', JSON.stringify(sealed), '| job before:', JSON.stringify(before), 'after:', JSON.stringify(after));
  // The keyless writer cannot read why (the refusal is sealed too); the agent says it.
  expect(forged).not.toHaveProperty('accepted');
  expect(sealed).toEqual({ accepted: { minNodes: 1, maxNodes: 3 } });
  expect(after).toEqual({ ...before, nodes: '1:3' });
  console.log('agent:', a.agent.output().split('\n').find((l) => l.includes('refused')));
  expect(a.agent.output()).toMatch(/^telastic: unsealed payload \(json\/plain\) refused: .*--accept-unsealed/m);
});

test('a sealed update lifted from one namespace does not open in another with the same key', async () => {
  const server = await startPrivateServer({ namespace: 'seal-b' });
  const connB = await Connection.connect({ address: server.address });
  try {
    const b = await keyedJob('seal-b', connB, server.address, 'seal-b');
    // The owner's sealed scale to job a (the test above), as namespace default's history holds it.
    const history = await new Client({ connection: e2e.conn }).workflow.getHandle(a.job).fetchHistory();
    const lifted = history.events?.flatMap((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads ?? []).pop();
    expect(lifted).toBeDefined();
    const replayed = await outcome(replaying(connB, 'seal-b', lifted as Payload).workflow.getHandle(b.job).executeUpdate('scale', { args: [{}] }));
    const bAfter = gist(await b.status());
    console.log('lifted seal in seal-b:', JSON.stringify(replayed), '| job before:', JSON.stringify(gist(b.first)), 'after:', JSON.stringify(bAfter));
    expect(replayed).not.toHaveProperty('accepted');
    expect(bAfter).toEqual(gist(b.first));
    console.log('agent:', b.agent.output().split('\n').find((l) => l.includes('does not open')));
    expect(b.agent.output()).toMatch(/^telastic: sealed payload does not open in namespace seal-b under key /m);
    finish(b.out);
    expect(await b.agent.exited).toBe(0);
  } finally {
    await connB.close();
  }
});

test('a keyed job\'s history names no host in its identities', async () => {
  finish(a.out);
  await a.agent.exited;
  // The test's own clients keep the SDK's default identity (pid@host): only telastic's count.
  const own = `"identity":"${process.pid}@${os.hostname()}"`;
  const identities = (JSON.stringify(await shownHistory(a.job)).match(/"identity":"[^"]*"/g) ?? []).filter((i) => i !== own);
  console.log('identities:', [...new Set(identities)].join(', '));
  expect(identities.length).toBeGreaterThan(0);
  expect(identities.filter((i) => i.includes(os.hostname()))).toEqual([]);
});

test('`telastic status` of a job whose worker failed with terminal escapes prints none of them raw', async () => {
  const dir = tmpDir('hostile-escapes');
  const script = path.join(dir, 'escapes.py');
  writeFileSync(script, 'import sys\nsys.stderr.write("boom \\x1b]0;owned-title\\x07 \\x1b[2J\\x1b[1;31mFAKE: all nodes healthy\\x1b[0m \\u202egnp.exe\\x9b31m\\n")\nsys.exit(1)\n');
  const job = uniqueJobId('escapes');
  const agent = startAgent(testAddress(), 'escapes-a', ['--nnodes', '1', '--nproc-per-node', '1', '--max-restarts', '0', '--rdzv-id', job, ...FAST_RDZV, script]);
  e2e.agents.push(agent);
  expect(await agent.exited).toBe(1);
  const shown = await run(process.execPath, [BIN, 'status', job, '--address', testAddress()]);
  const raw = [...shown.stdout].filter((c) => CONTROL.test(c));
  console.log('status:', JSON.stringify(shown.stdout), '| raw controls:', JSON.stringify(raw.join('')));
  expect(shown.stdout).toContain('FAKE: all nodes healthy');
  expect(raw).toEqual([]);
  // The agent's own last line quotes the failure too (the worker's stderr above it is the worker's).
  const summary = agent.output().split('\n').find((l) => l.startsWith(`telastic: job ${job} failed`)) ?? '';
  console.log('agent summary:', JSON.stringify(summary));
  expect(summary).toContain('FAKE: all nodes healthy');
  expect([...summary].filter((c) => CONTROL.test(c))).toEqual([]);
});
