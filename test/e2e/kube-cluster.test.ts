/**
 * The test cluster itself (test/setup/kube-cluster.ts): it comes up with a Ready node of the
 * version built; a pod from the telastic image (built by the private dockerd, loaded into the
 * cluster's containerd, imagePullPolicy Never) runs `telastic --help` and `kubectl logs` reads it;
 * a pod on the bridge gets an address of its own that the host reaches; and after stop() nothing
 * of it is left: processes, mounts, the bridge and its routes, the directory. Also that what a
 * killed run leaves (a process, a mount and a bridge of a pid that is gone) is swept at start.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { KUBERNETES_VERSION, NODE_NAME, startCluster, type KubeCluster } from '../setup/kube-cluster';
import { bridgeName, DIR_PREFIX, mountsUnder, processesOf, sweepStale } from '../setup/kube-host';
import { saveTelasticImage } from '../setup/kube-images';
import { tmpDir, waitFor } from './harness';

jest.setTimeout(30 * 60_000);

let k: KubeCluster;
/** The host ends of the pods' veths, seen while they ran. */
let podVeths: string[] = [];

beforeAll(async () => {
  const image = await saveTelasticImage(tmpDir('kube-image'));
  console.log(`image ${image.tag}: built in ${image.buildSeconds.toFixed(1)} s, saved in ${image.saveSeconds.toFixed(1)} s`);
  const t0 = Date.now();
  k = await startCluster();
  const started = (Date.now() - t0) / 1000;
  const t1 = Date.now();
  await k.loadImage(image.tarball);
  const times = Object.entries(k.startTimes).map(([s, t]) => `${s} ${t.toFixed(1)}`).join(', ');
  console.log(`cluster up in ${started.toFixed(1)} s (${times}); image loaded in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
});

afterAll(async () => {
  await k?.stop();
});

const pod = (name: string, spec: Record<string, unknown>) => JSON.stringify({
  apiVersion: 'v1', kind: 'Pod', metadata: { name },
  spec: { restartPolicy: 'Never', automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, ...spec },
});

const phase = async (name: string) => (await k.must(['get', 'pod', name, '-o', 'jsonpath={.status.phase}'])).trim();

test('the node is Ready, of the version built, and RBAC governs service accounts', async () => {
  const node = JSON.parse(await k.must(['get', 'node', NODE_NAME, '-o', 'json'])) as {
    status: { nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string }; addresses: { type: string; address: string }[]; conditions: { type: string; status: string }[] };
  };
  expect(node.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  expect(node.status.nodeInfo.kubeletVersion).toBe(`v${KUBERNETES_VERSION}`);
  expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);
  expect(node.status.addresses).toContainEqual({ type: 'InternalIP', address: k.gateway });
  const version = JSON.parse(await k.must(['version', '-o', 'json'])) as { serverVersion: { gitVersion: string } };
  expect(version.serverVersion.gitVersion).toBe(`v${KUBERNETES_VERSION}`);
  // The default service account may not list pods: the API server authorizes with RBAC.
  const canI = (...as: string[]) => k.kubectl(['auth', 'can-i', 'list', 'pods', ...as]).then((r) => `${r.code} ${r.stdout.trim()}`);
  expect(await canI('--as', 'system:serviceaccount:default:default')).toBe('1 no');
  expect(await canI()).toBe('0 yes');
});

test('a pod from the telastic image runs telastic --help, and kubectl logs reads it', async () => {
  await k.must(['apply', '-f', '-'], { input: pod('help', { containers: [{ name: 'telastic', image: 'telastic:test', imagePullPolicy: 'Never', args: ['--help'] }] }) });
  await waitFor('pod help Succeeded', async () => {
    const p = await phase('help');
    if (p === 'Failed') throw new Error(`pod help failed: ${await k.must(['describe', 'pod', 'help'])}`);
    return p === 'Succeeded';
  }, 180_000, 500);
  const logs = await k.must(['logs', 'help']);
  expect(logs).toMatch(/^Usage: telastic /m);
  expect(logs).toMatch(/\bcontroller\b/);
});

test('a pod on the bridge gets its own address, which the host reaches', async () => {
  const server = "require('http').createServer((q, r) => r.end('pod ' + require('os').hostname())).listen(8080)";
  await k.must(['apply', '-f', '-'], { input: pod('web', { containers: [{ name: 'web', image: 'telastic:test', imagePullPolicy: 'Never', command: ['node', '-e', server] }] }) });
  const ip = await waitFor('pod web Running with an IP', async () =>
    ((await phase('web')) === 'Running' ? (await k.must(['get', 'pod', 'web', '-o', 'jsonpath={.status.podIP}'])).trim() : ''), 120_000, 500);
  const [subnet] = k.podCidr.split('.0/24');
  expect(ip.startsWith(`${subnet}.`)).toBe(true);
  expect(ip).not.toBe(k.gateway);
  // The pod's veth is on the cluster's bridge.
  podVeths = [...spawnSync('ip', ['-o', 'link', 'show', 'master', k.bridge], { encoding: 'utf8' }).stdout.matchAll(/^\d+: (veth[^@:]+)/gm)].map((m) => m[1]);
  expect(podVeths.length).toBeGreaterThan(0);
  const body = await waitFor(`http://${ip}:8080 answering`, async () => (await fetch(`http://${ip}:8080/`)).text(), 30_000);
  expect(body).toBe('pod web');
});

test('a pod reaches the API server at apiServer with its service account token, and RBAC answers', async () => {
  // What an in-cluster client (@kubernetes/client-node's loadFromCluster) reads: the token and CA
  // mounted by the kubelet, KUBERNETES_SERVICE_HOST/PORT (set here: ClusterIPs are not routed).
  const client = [
    "const fs = require('fs'); const d = '/var/run/secrets/kubernetes.io/serviceaccount/';",
    "require('https').get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT, path: '/api/v1/namespaces/default/pods',",
    "  ca: fs.readFileSync(d + 'ca.crt'), headers: { authorization: 'Bearer ' + fs.readFileSync(d + 'token', 'utf8') } },",
    "  (r) => { let b = ''; r.on('data', (c) => (b += c)); r.on('end', () => console.log(r.statusCode, JSON.parse(b).message)); });",
  ].join('\n');
  const url = new URL(k.apiServer);
  await k.must(['apply', '-f', '-'], { input: pod('incluster', { automountServiceAccountToken: true, containers: [{
    name: 'client', image: 'telastic:test', imagePullPolicy: 'Never', command: ['node', '-e', client],
    env: [{ name: 'KUBERNETES_SERVICE_HOST', value: url.hostname }, { name: 'KUBERNETES_SERVICE_PORT', value: url.port }],
  }] }) });
  await waitFor('pod incluster Succeeded', async () => {
    const p = await phase('incluster');
    if (p === 'Failed') throw new Error(`pod incluster failed: ${await k.must(['logs', 'incluster'])}`);
    return p === 'Succeeded';
  }, 120_000, 500);
  expect((await k.must(['logs', 'incluster'])).trim()).toBe(
    '403 pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"');
});

test('stop() leaves nothing: processes, mounts, the bridge and its routes, the directory', async () => {
  const { dir, bridge, podCidr } = k;
  expect(processesOf(dir).length).toBeGreaterThan(0); // the check below can see what it looks for
  expect(mountsUnder(dir).length).toBeGreaterThan(0);
  await k.stop();
  expect(processesOf(dir)).toEqual([]);
  expect(mountsUnder(dir)).toEqual([]);
  expect(spawnSync('ip', ['link', 'show', bridge]).status).not.toBe(0);
  expect(podVeths.length).toBeGreaterThan(0);
  for (const veth of podVeths) expect(`${veth}: ${spawnSync('ip', ['link', 'show', veth]).status === 0 ? 'left' : 'gone'}`).toBe(`${veth}: gone`);
  expect(spawnSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' }).stdout).not.toContain(podCidr.split('/')[0]);
  expect(existsSync(dir)).toBe(false);
});

test('what a killed run left (its pid gone) is swept: processes, mounts, its bridge, its directory', async () => {
  const dead = spawnSync('true').pid as number;
  const dir = `${DIR_PREFIX}${dead}-leftover`;
  const bridge = bridgeName(dead);
  mkdirSync(`${dir}/mnt`, { recursive: true });
  spawnSync('mount', ['-t', 'tmpfs', 'tmpfs', `${dir}/mnt`]);
  spawnSync('ip', ['link', 'add', bridge, 'type', 'bridge']);
  // A shim-like process naming the directory, and its child (a container's process).
  const left = spawn('sh', ['-c', 'sleep 600; :', `${dir}/containerd.sock`], { stdio: 'ignore' });
  try {
    const procs = await waitFor('the leftover process and its child', () => { const p = processesOf(dir); return p.length === 2 && p; }, 10_000, 50);
    expect(procs).toContain(left.pid);
    expect({ mounts: mountsUnder(dir), bridge: spawnSync('ip', ['link', 'show', bridge]).status }).toEqual({ mounts: [`${dir}/mnt`], bridge: 0 });
    expect(sweepStale()).toEqual(expect.arrayContaining([dir.slice('/tmp/'.length), bridge]));
    expect({ mounts: mountsUnder(dir), procs: processesOf(dir), bridge: spawnSync('ip', ['link', 'show', bridge]).status === 0, dir: existsSync(dir) })
      .toEqual({ mounts: [], procs: [], bridge: false, dir: false });
  } finally {
    left.kill('SIGKILL');
    spawnSync('umount', ['-l', `${dir}/mnt`]);
    spawnSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    spawnSync('rm', ['-rf', dir]);
  }
});
