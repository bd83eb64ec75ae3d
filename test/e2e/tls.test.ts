/**
 * TLS, mTLS and API keys for real: a TLS-terminating HTTP/2 proxy (test/setup/tls-proxy.ts) in
 * front of the test's dev server, certificates made by openssl for this run. A real agent and a
 * controller run a job through the proxies, every client command reaches the job through them,
 * and each way of being refused ends a command at once with one line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { makeTestCerts, startTlsProxy, type TestCerts, type TlsProxy } from '../setup/tls-proxy';
import { testAddress } from '../setup/temporal';
import { runTelastic as telastic, FAST_RDZV, WORKER, finish, recordedPids, startAgent, startTelastic, status, stopAll, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const KEY = 'telastic-test-key';
const agents: Agent[] = [];
let certs: TestCerts;
/** Server TLS only; mTLS; mTLS and an API key. */
let tls: TlsProxy;
let mtls: TlsProxy;
let keyed: TlsProxy;
let conn: Connection;

beforeAll(async () => {
  certs = makeTestCerts(mkdtempSync(path.join(os.tmpdir(), 'telastic-tls-')));
  tls = await startTlsProxy({ target: testAddress(), certs });
  mtls = await startTlsProxy({ target: testAddress(), certs, requireClientCert: true });
  keyed = await startTlsProxy({ target: testAddress(), certs, requireClientCert: true, apiKey: KEY });
  conn = await Connection.connect({ address: testAddress() });
});
afterAll(async () => {
  await stopAll(agents);
  await Promise.all([tls?.close(), mtls?.close(), keyed?.close(), conn?.close()]);
  if (certs) rmSync(certs.dir, { recursive: true, force: true });
});

const ca = () => ['--tls-ca-path', certs.caCert];
const client = () => [...ca(), '--tls-cert-path', certs.clientCert, '--tls-key-path', certs.clientKey];

/** Lines of stderr, without Node's own warnings (which the user can turn off with NODE_NO_WARNINGS). */
function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

test('a job runs end to end through TLS: the agent with --tls-ca-path, the controller with mTLS and an API key, and every client command over server TLS and mTLS', async () => {
  const job = uniqueJobId('tls');
  const queue = `tq-${job}`;
  const out = mkdtempSync(path.join(os.tmpdir(), 'telastic-tls-out-'));
  const controller = startTelastic(`${job}-controller`, ['controller', '--address', keyed.address, '--task-queue', queue, ...client(), '--api-key', KEY]);
  agents.push(controller);
  const agent = startAgent(tls.address, `${job}-a`, ['--task-queue', queue, '--no-coordinator', '--nnodes', '1:2', ...ca(), ...FAST_RDZV, '--rdzv-id', job, WORKER, '--out', out]);
  agents.push(agent);
  const s = await waitForRound(conn, job, (x) => x.worldSize === 1);
  await waitFor('the worker', () => recordedPids(out, s.round).length === 1);

  // Every client command, over server TLS and over mTLS (grpc-js), and with the API key.
  const via = (p: TlsProxy, flags: string[]) => ['--address', p.address, ...flags];
  const st = await telastic(['status', job, '--json', ...via(mtls, client())]);
  expect(st).toMatchObject({ code: 0, stderr: '' });
  expect(JSON.parse(st.stdout)).toMatchObject({ jobId: job, state: 'running', worldSize: 1 });
  expect(await telastic(['status', job, ...via(keyed, [...client(), '--api-key', KEY])])).toMatchObject({ code: 0, stdout: expect.stringContaining(`job ${job}: running`) });
  expect(await telastic(['scale', job, '--max', '3', ...via(tls, ca())])).toMatchObject({ code: 0, stdout: `job ${job}: nodes 1:3\n` });
  expect(await telastic(['scale', job, '--max', '2', ...via(mtls, client())])).toMatchObject({ code: 0, stdout: `job ${job}: nodes 1:2\n` });
  // Answers that need the server (and, for drain, the controller): a node not in the job is
  // rejected by the coordinator's validator, an unknown pool by the server.
  expect(await telastic(['drain', job, 'no-such-node', ...via(tls, ca())])).toMatchObject({ code: 2, stdout: '', stderr: `telastic: node no-such-node is not in job ${job} (nodes: ${job}-a)\n` });
  expect(await telastic(['pool', `no-pool-${job}`, ...via(mtls, client())])).toMatchObject({ code: 1, stdout: '', stderr: `telastic: job pool/no-pool-${job} not found\n` });

  finish(out);
  expect(await agent.exited).toBe(0);
  expect(agent.output()).toContain('succeeded');
  expect(await status(conn, job)).toMatchObject({ state: 'succeeded' });
  // Both SDK clients send the key as Temporal Cloud expects it, and the proxy took it.
  expect(keyed.authorizations.length).toBeGreaterThan(0);
  expect(new Set(keyed.authorizations)).toEqual(new Set([`Bearer ${KEY}`]));
  expect(keyed.refused).toBe(0);

  // The job may still be closing: "cancel requested", or "not found" once it has closed.
  const cancelled = await telastic(['cancel', job, ...via(tls, ca())]);
  expect(cancelled.stdout + cancelled.stderr).toMatch(new RegExp(`^(job ${job}: cancel requested|telastic: job ${job} not found)\n$`));
  controller.proc.kill('SIGTERM');
  expect(await controller.exited).toBe(0);
  rmSync(out, { recursive: true, force: true });
});

test('each refusal ends the command at once with one line and exit 1, from both SDK clients', async () => {
  const job = uniqueJobId('tls-refused');
  const refused = (p: TlsProxy) => `telastic: cannot connect to Temporal at ${p.address}: `;
  const runRefused = (p: TlsProxy) => `telastic run: cannot connect to Temporal at ${p.address}: `;
  const run = (p: TlsProxy, flags: string[]) => ['run', '--rdzv-endpoint', p.address, '--rdzv-id', job, ...flags, WORKER, '--out', os.tmpdir()];
  const cases: [string, string[], string | string[]][] = [
    // grpc-js (the client commands) and core (run, controller) each meet every refusal once.
    ['no client certificate under mTLS (grpc-js)', ['status', job, '--address', mtls.address, ...ca()], `${refused(mtls)}TLS handshake refused: the server wants a client certificate (mTLS); give --tls-cert-path and --tls-key-path`],
    ['no client certificate under mTLS (core)', ['controller', '--address', mtls.address, ...ca()], `${refused(mtls)}TLS handshake refused: the server wants a client certificate (mTLS); give --tls-cert-path and --tls-key-path`],
    ['a client certificate from another CA (grpc-js)', ['cancel', job, '--address', mtls.address, ...ca(), '--tls-cert-path', certs.otherClientCert, '--tls-key-path', certs.otherClientKey], `${refused(mtls)}TLS handshake refused: the server hung up right after the handshake, before any HTTP/2 (it does not accept the client certificate)`],
    ['a client certificate from another CA (core)', run(mtls, [...ca(), '--tls-cert-path', certs.otherClientCert, '--tls-key-path', certs.otherClientKey]), `${runRefused(mtls)}TLS handshake refused: the server hung up right after the handshake, before any HTTP/2 (it does not accept the client certificate)`],
    ['a server CA that does not match (grpc-js)', ['scale', job, '--max', '2', '--address', tls.address, '--tls-ca-path', certs.otherCaCert], `${refused(tls)}TLS handshake failed: the server's certificate is not trusted (unable to verify the first certificate); give its CA with --tls-ca-path`],
    ['a server CA that does not match (core)', run(tls, ['--tls-ca-path', certs.otherCaCert]), `${runRefused(tls)}TLS handshake failed: the server's certificate is not trusted (unable to verify the first certificate); give its CA with --tls-ca-path`],
    ['a wrong API key (grpc-js)', ['drain', job, 'n', '--address', keyed.address, ...client(), '--api-key', 'wrong'], `${refused(keyed)}the server refused the API key (UNAUTHENTICATED: invalid API key)`],
    // A controller is long-lived too: the key on its command line is said first.
    ['a wrong API key (core)', ['controller', '--address', keyed.address, ...client(), '--api-key', 'wrong'], [
      'telastic controller: warning: --api-key on the command line can be read by every local user (ps, /proc/PID/cmdline); set TEMPORAL_API_KEY or use --api-key-file instead',
      `${refused(keyed)}the server refused the API key (UNAUTHENTICATED: invalid API key)`,
    ]],
    ['a missing API key (grpc-js)', ['status', job, '--address', keyed.address, ...client()], `${refused(keyed)}the server wants credentials (UNAUTHENTICATED: missing API key); give --api-key`],
    ['a missing API key (core)', run(keyed, client()), `${runRefused(keyed)}the server wants credentials (UNAUTHENTICATED: missing API key); give --api-key`],
    // No TLS option at all against a TLS server (Temporal Cloud without --tls): named, not waited on.
    ['no TLS against a TLS server (grpc-js)', ['status', job, '--address', tls.address], `${refused(tls)}the server speaks TLS and this client does not; connect with --tls (add --tls-ca-path if its certificate is from a private CA)`],
    ['no TLS against a TLS server (core)', run(tls, []), `${runRefused(tls)}the server speaks TLS and this client does not; connect with --tls (add --tls-ca-path if its certificate is from a private CA)`],
    // The pool's two commands take the same paths: submit (grpc-js) and agent (core first).
    ['submit without a client certificate under mTLS', ['submit', '--pool', 'p', '--rdzv-id', job, '--address', mtls.address, ...ca(), WORKER], `telastic submit: cannot connect to Temporal at ${mtls.address}: TLS handshake refused: the server wants a client certificate (mTLS); give --tls-cert-path and --tls-key-path`],
    // A long-lived agent given the key on its command line (readable in ps) also says so, first.
    ['agent with a wrong API key', ['agent', '--pool', 'p', '--node-id', `${job}-n`, '--allow', os.tmpdir(), '--address', keyed.address, ...client(), '--api-key', 'wrong'], [
      'telastic agent: warning: --api-key on the command line can be read by every local user (ps, /proc/PID/cmdline); set TEMPORAL_API_KEY or use --api-key-file instead',
      `telastic agent: cannot connect to Temporal at ${keyed.address}: the server refused the API key (UNAUTHENTICATED: invalid API key)`,
    ]],
  ];
  const results = await Promise.all(cases.map(([, args]) => telastic(args)));
  const seen = cases.map(([name], i) => ({ name, code: results[i].code, stderr: lines(results[i].stderr), stdout: results[i].stdout }));
  expect(seen).toEqual(cases.map(([name, , line]) => ({ name, code: 1, stderr: typeof line === 'string' ? [line] : line, stdout: '' })));
  // No "waiting for Temporal" line above (it is said on the first transient failure): the first
  // attempt decided, which takes at most grpc-js's 3 s and one handshake of telastic's own. No
  // bound on the wall time here beyond execFile's 60 s: fourteen Node processes starting at once
  // took 10-25 s on a loaded 2-core machine (one alone starts in about 1 s).
  expect(keyed.refused).toBeGreaterThanOrEqual(5);
});
