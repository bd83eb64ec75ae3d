/**
 * `telastic setup` and the controller's check, on a private dev server started without telastic's
 * search attributes (as a production cluster is before setup): the first run registers them, the
 * second finds them, a wrong type, a missing namespace and a denied AddSearchAttributes are one
 * line each; a controller warns once on a namespace that lacks them and not after setup.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import type { DevServer } from '../../src/temporal/dev-server';
import { makeTestCerts, startTlsProxy, type TestCerts, type TlsProxy } from '../setup/tls-proxy';
import { startPrivateServer, stopPrivateServers } from '../setup/temporal';
import { runTelastic as telastic, startTelastic, stopAll, waitFor, type Agent } from './harness';

const NAMES = ['TelasticState', 'TelasticWorldSize', 'TelasticRound', 'TelasticRestarts'];
let server: DevServer;
let conn: Connection;
const agents: Agent[] = [];

beforeAll(async () => {
  server = await startPrivateServer({ searchAttributes: false });
  conn = await Connection.connect({ address: server.address });
});
afterAll(async () => {
  await stopAll(agents);
  await conn?.close();
  await stopPrivateServers();
});

/** A namespace of the test's own, with a 3-day retention, served before this returns. */
async function namespace(name: string): Promise<string> {
  await conn.workflowService.registerNamespace({ namespace: name, workflowExecutionRetentionPeriod: msToTs('3 days') });
  await waitFor(`namespace ${name}`, () => conn.workflowService.describeNamespace({ namespace: name }).then(() => true, () => false));
  return name;
}

async function customAttributes(ns: string): Promise<Record<string, number>> {
  return (await conn.operatorService.listSearchAttributes({ namespace: ns })).customAttributes ?? {};
}

test('the dev server starts without telastic\'s search attributes when told so', async () => {
  expect(Object.keys(await customAttributes('default')).filter((n) => n.startsWith('Telastic'))).toEqual([]);
});

test('a first run registers every attribute and says so; a second finds them all and says so; both exit 0', async () => {
  const ns = await namespace('fresh');
  const first = await telastic(['setup', '--address', server.address, '--namespace', ns]);
  expect(first).toEqual({
    code: 0,
    stderr: '',
    stdout: [
      'namespace fresh: retention 72h',
      'search attribute TelasticState (Keyword): registered',
      'search attribute TelasticWorldSize (Int): registered',
      'search attribute TelasticRound (Int): registered',
      'search attribute TelasticRestarts (Int): registered',
      '',
    ].join('\n'),
  });
  expect(await customAttributes(ns)).toMatchObject({ TelasticState: 2, TelasticWorldSize: 3, TelasticRound: 3, TelasticRestarts: 3 });
  const second = await telastic(['setup', '--address', server.address, '-n', ns]);
  expect(second.code).toBe(0);
  expect(second.stdout.split('\n').filter(Boolean)).toEqual(['namespace fresh: retention 72h', ...NAMES.map((n) => expect.stringMatching(new RegExp(`^search attribute ${n} \\((Keyword|Int)\\): already registered$`)))]);
});

test('an attribute registered with another type is one line naming it, and nothing is added', async () => {
  const ns = await namespace('mistyped');
  await conn.operatorService.addSearchAttributes({ namespace: ns, searchAttributes: { TelasticRound: 2 } });
  const r = await telastic(['setup', '--address', server.address, '--namespace', ns]);
  expect(r).toEqual({
    code: 1,
    stdout: '',
    stderr: 'telastic: search attribute TelasticRound is registered in namespace mistyped as Keyword, telastic needs Int; remove it (temporal operator search-attribute remove --namespace mistyped --name TelasticRound) or use another namespace\n',
  });
  expect(Object.keys(await customAttributes(ns)).filter((n) => n.startsWith('Telastic'))).toEqual(['TelasticRound']);
});

test('a missing namespace is one line with how to create it', async () => {
  const r = await telastic(['setup', '--address', server.address, '--namespace', 'no-such-ns']);
  expect(r).toEqual({
    code: 1,
    stdout: '',
    stderr: `telastic: namespace no-such-ns does not exist on Temporal at ${server.address}; create it with: temporal operator namespace create --namespace no-such-ns\n`,
  });
});

describe('a caller the server lets in but may not add search attributes', () => {
  let certs: TestCerts;
  let proxy: TlsProxy;
  /** Denies the listing too: a controller that may not even look. */
  let blind: TlsProxy;
  beforeAll(async () => {
    certs = makeTestCerts(mkdtempSync(path.join(os.tmpdir(), 'telastic-setup-')));
    proxy = await startTlsProxy({ target: server.address, certs, deny: /\.OperatorService\/AddSearchAttributes$/ });
    blind = await startTlsProxy({ target: server.address, certs, deny: /\.OperatorService\/(Add|List)SearchAttributes$/ });
  });
  afterAll(async () => {
    await Promise.all([proxy?.close(), blind?.close()]);
    if (certs) rmSync(certs.dir, { recursive: true, force: true });
  });

  test('is one line saying what to ask the cluster\'s admin for, and nothing is added', async () => {
    const ns = await namespace('denied');
    const r = await telastic(['setup', '--address', proxy.address, '--tls-ca-path', certs.caCert, '--namespace', ns]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      "telastic: this caller may not add search attributes to namespace denied (PERMISSION_DENIED: Request unauthorized: /temporal.api.operatorservice.v1.OperatorService/AddSearchAttributes); ask the cluster's admin to run `telastic setup --namespace denied` or to grant this caller the operator API's AddSearchAttributes\n",
    );
    expect(proxy.authorizations.length).toBeGreaterThan(0); // it went through the proxy
    expect(Object.keys(await customAttributes(ns)).filter((n) => n.startsWith('Telastic'))).toEqual([]);
  });

  test('a controller that may not list them says so once and serves anyway (core\'s client)', async () => {
    const c = startTelastic('setup-controller-blind', ['controller', '--address', blind.address, '--tls-ca-path', certs.caCert, '--task-queue', 'setup-test-blind']);
    agents.push(c);
    await waitFor('the controller serving', () => c.output().includes('telastic controller: serving'));
    expect(c.output().split('\n').filter((l) => l.includes('search attributes'))).toEqual([
      expect.stringMatching(/^telastic controller: warning: cannot check telastic's search attributes in namespace default \(PERMISSION_DENIED: Request unauthorized: \S+ListSearchAttributes\); `telastic setup` registers them$/),
    ]);
    await stopAll([c]);
  });
});

test('a controller says once what its namespace lacks, and nothing once `telastic setup` ran', async () => {
  const ns = await namespace('controlled');
  const args = ['controller', '--address', server.address, '--namespace', ns, '--task-queue', 'setup-test'];
  const before = startTelastic('setup-controller-before', args);
  agents.push(before);
  await waitFor('the first controller serving', () => before.output().includes('telastic controller: serving'));
  const warnings = before.output().split('\n').filter((l) => l.includes('search attributes'));
  expect(warnings).toEqual([
    "telastic controller: warning: namespace controlled lacks telastic's search attributes TelasticState, TelasticWorldSize, TelasticRound, TelasticRestarts: jobs run without them, and the Web UI's job list cannot filter on them (jobs submitted meanwhile never get them); run `telastic setup`",
  ]);
  await stopAll([before]);

  expect((await telastic(['setup', '--address', server.address, '--namespace', ns])).code).toBe(0);
  const after = startTelastic('setup-controller-after', args);
  agents.push(after);
  await waitFor('the second controller serving', () => after.output().includes('telastic controller: serving'));
  expect(after.output()).not.toContain('search attributes');
});
