/**
 * The agent runtime (src/agent/runtime.ts) with a recording membership, against the test's
 * Temporal server: the order of its steps, the bounded graceful leave, a rejected join and a
 * payload it cannot unseal. The real memberships run in the e2e tests (rendezvous, pool…).
 */
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAgent, type Membership, type RuntimeOptions } from '../../src/agent/runtime';
import { JobInputError } from '../../src/client/api';
import type { Sealing } from '../../src/temporal/data-converter';
import { SealedPayloadError } from '../../src/temporal/sealing';
import { testAddress } from '../setup/temporal';

let connection: Connection;
let nativeConnection: NativeConnection;
beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') }); // not every worker state change
  connection = await Connection.connect({ address: testAddress() });
  nativeConnection = await NativeConnection.connect({ address: testAddress() });
});
afterAll(async () => {
  await connection?.close();
  await nativeConnection?.close();
});

let seq = 0;
function options(extra: Partial<RuntimeOptions> = {}): RuntimeOptions {
  const nodeId = `rt-${process.pid}-${seq++}`;
  return {
    nodeId,
    localAddr: '127.0.0.1',
    namespace: 'default',
    taskQueue: `tq-${nodeId}`,
    coordinator: false,
    output: { redirects: 0, tee: 0 },
    stateDir: mkdtempSync(path.join(os.tmpdir(), 'telastic-runtime-')),
    connection,
    nativeConnection,
    ...extra,
  };
}

/** A membership that records what the runtime asks of it; `released` answers from `releases`. */
function recording(over: Partial<Membership> & { releases?: boolean[] } = {}): Membership & { steps: string[] } {
  const steps: string[] = [];
  const releases = over.releases ?? [false, true];
  return {
    steps,
    what: 'pool fake',
    logBindings: { pool: 'fake' },
    runs: { shutdownTimeoutMs: 1000 },
    workflowId: `no-such-workflow-${process.pid}-${seq++}`, // nothing to open: the sealed check passes
    start: async () => void steps.push('start'),
    join: async () => void steps.push('join'),
    follow: async (_node, stop) => {
      steps.push('follow');
      await new Promise((r) => (stop.aborted ? r(null) : stop.addEventListener('abort', r, { once: true })));
      steps.push('stopped');
      return { outcome: { code: 0, summary: 'left' }, leave: true };
    },
    sendLeave: async () => void steps.push('sendLeave'),
    released: async () => {
      steps.push('released');
      return releases.shift() ?? false;
    },
    leaveWaitMs: 10_000,
    ...over,
  };
}

test('start, join, follow until stopped, then leave and wait until released', async () => {
  const m = recording();
  const stop = new AbortController();
  const outcome = runAgent(options(), m, stop.signal);
  await waitUntil(() => m.steps.includes('follow'));
  stop.abort();
  expect(await outcome).toEqual({ code: 0, summary: 'left' });
  expect(m.steps).toEqual(['start', 'join', 'follow', 'stopped', 'sendLeave', 'released', 'released']);
});

test('a coordinator that never lets the node go is waited for leaveWaitMs only', async () => {
  const m = recording({ releases: [], leaveWaitMs: 1000 });
  const stop = new AbortController();
  stop.abort();
  const started = Date.now();
  expect(await runAgent(options(), m, stop.signal)).toEqual({ code: 0, summary: 'left' });
  expect(Date.now() - started).toBeLessThan(8000);
  expect(m.steps.filter((s) => s === 'released').length).toBeGreaterThanOrEqual(2);
});

test('a leave that cannot be sent is not waited on', async () => {
  const m = recording({ sendLeave: () => Promise.reject(new Error('no server')) });
  const stop = new AbortController();
  stop.abort();
  await runAgent(options(), m, stop.signal);
  expect(m.steps).not.toContain('released');
});

test('a join the coordinator rejects ends the agent with exit code 2, without following', async () => {
  const m = recording({ join: () => Promise.reject(new JobInputError('slots: too many', 'j')) });
  expect(await runAgent(options(), m, new AbortController().signal)).toEqual({ code: 2, summary: 'join rejected: slots: too many' });
  expect(m.steps).not.toContain('follow');
});

test('a payload the node cannot unseal stops it with exit code 1 and no leave', async () => {
  let unseal: (err: SealedPayloadError) => void = () => {};
  const sealing = { keys: [], unsealable: new Promise<SealedPayloadError>((r) => (unseal = r)) } as unknown as Sealing;
  const m = recording();
  const outcome = runAgent(options({ sealing }), m, new AbortController().signal);
  await waitUntil(() => m.steps.includes('follow'));
  unseal(new SealedPayloadError('sealed with key k1, which this process lacks', 'k1'));
  expect(await outcome).toEqual({ code: 1, summary: 'pool fake: sealed with key k1, which this process lacks' });
  expect(m.steps).not.toContain('sendLeave');
});

async function waitUntil(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
