/**
 * The chart and the TelasticJob resource against the real API server (test/setup/kube-cluster.ts):
 * the CRD is accepted (its CEL rules compile within the server's cost budget), the example job is
 * valid, and what zod rejects the server rejects too, naming the field; `helm lint` passes, bad
 * values are refused naming the key, and `helm template | kubectl apply --dry-run=server` is
 * accepted by the server, pool agents and TLS included.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { startCluster, type KubeCluster } from '../setup/kube-cluster';
import { ROOT } from './harness';

jest.setTimeout(10 * 60_000);

const CHART = path.join(ROOT, 'charts', 'telastic');
const CRD = path.join(ROOT, 'deploy', 'crd', 'telasticjobs.telastic.dev.yaml');
let k: KubeCluster;

beforeAll(async () => {
  k = await startCluster();
});
afterAll(async () => {
  await k?.stop();
});

function helm(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(k.helm, args, { env: { ...process.env, KUBECONFIG: k.kubeconfig, HELM_CACHE_HOME: path.join(k.dir, 'helm-cache'), HELM_CONFIG_HOME: path.join(k.dir, 'helm-config'), HELM_DATA_HOME: path.join(k.dir, 'helm-data') }, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

test('the chart\'s CRD is the one in deploy/crd', () => {
  expect(readFileSync(path.join(CHART, 'crds', path.basename(CRD)), 'utf8')).toBe(readFileSync(CRD, 'utf8'));
});

test('the API server accepts the CRD and the example job, and refuses what zod refuses, naming the field', async () => {
  await k.must(['apply', '-f', CRD]);
  await k.must(['wait', '--for', 'condition=Established', '--timeout', '60s', 'crd/telasticjobs.telastic.dev']);
  const example = readFileSync(path.join(ROOT, 'examples', 'telasticjob.yaml'), 'utf8');
  expect(await k.must(['apply', '--dry-run=server', '-f', '-'], { input: example })).toMatch(/telasticjob\.telastic\.dev\/\S+ created \(server dry run\)/);
  const bad = example.replace(/(nnodes:\s*\{?\s*min:\s*)\d+/, '$19');
  expect(bad).not.toBe(example);
  const r = await k.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: bad });
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/spec\.nnodes/);
  // A CEL rule with the defaulted checkpoint.mountPath: a mount there would make every pod refused.
  const clash = { apiVersion: 'telastic.dev/v1alpha1', kind: 'TelasticJob', metadata: { name: 'clash', namespace: 'default' },
    spec: { image: 'x', command: ['t.py'], nnodes: { min: 1, max: 2 }, checkpoint: { volume: { emptyDir: {} } }, volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'd', mountPath: '/checkpoints' }] } };
  const c = await k.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: JSON.stringify(clash) });
  expect({ code: c.code, stderr: c.stderr }).toEqual({ code: 1, stderr: expect.stringContaining("volumeMounts: checkpoint.mountPath is the checkpoint volume's") });
  // The printer columns are there for `kubectl get telasticjobs`.
  const crd = JSON.parse(await k.must(['get', 'crd', 'telasticjobs.telastic.dev', '-o', 'json'])) as { spec: { versions: { additionalPrinterColumns?: { name: string }[] }[] } };
  expect(crd.spec.versions[0].additionalPrinterColumns?.map((c) => c.name)).toEqual(expect.arrayContaining(['State', 'Round', 'World', 'Restarts']));
});

test('helm lint passes; bad values are refused naming the key', async () => {
  expect(await helm(['lint', CHART])).toMatchObject({ code: 0 });
  const bad = await helm(['lint', CHART, '--set', 'pool.nproc=zero']);
  expect(bad.code).not.toBe(0);
  expect(bad.out).toMatch(/pool\.nproc|nproc/);
  const addr = await helm(['template', 'x', CHART, '--set', 'temporal.address=no-port']);
  expect(addr.code).not.toBe(0);
  expect(addr.out).toMatch(/temporal\.address|address/);
});

test('helm template | kubectl apply --dry-run=server: the real API server takes every object, with pool agents, TLS and keys', async () => {
  await k.must(['apply', '-f', CRD]);
  for (const set of [[], ['--set', 'pool.enabled=true', '--set', 'pool.allow={/srv/train}', '--set', 'pool.hostPaths={/srv/train}', '--set', 'temporal.tls.enabled=true', '--set', 'temporal.tls.secretName=tls',
    '--set', 'temporal.apiKey.secretName=key', '--set', 'temporal.encryptionKey.secretName=seal', '--set', 'operator.enabled=false']]) {
    const t = await helm(['template', 'r', CHART, '--namespace', 'default', ...set]);
    expect(t).toMatchObject({ code: 0 });
    const applied = await k.must(['apply', '--dry-run=server', '-n', 'default', '-f', '-'], { input: t.out });
    expect(applied).toMatch(/deployment\.apps\/r-telastic-controller created \(server dry run\)/);
    expect(applied).toMatch(/poddisruptionbudget\.policy\/r-telastic-controller created/);
    if (set.length) expect(applied).toMatch(/daemonset\.apps\/r-telastic-agent created/);
    else expect(applied).toMatch(/clusterrole\.rbac\.authorization\.k8s\.io\/r-telastic-operator created/);
    // No ServiceMonitor without the Prometheus operator's CRD.
    expect(t.out).not.toMatch(/kind: ServiceMonitor/);
  }
});
