/**
 * A real single-node Kubernetes for one test file, from the binaries scripts/setup-kubernetes.sh
 * builds (v1.36.3) and Debian's etcd, containerd, runc and CNI plugins
 * (../shared/notes/kubernetes-here.md has the settings that matter on this machine):
 *   etcd → kube-apiserver (static tokens, RBAC, certificates from a CA of its own) →
 *   kube-controller-manager, kube-scheduler → a private containerd (own config, root, state and
 *   socket; a local pause image) → a kubelet; then it waits for the node to be Ready and the
 *   `default` service account to exist, and writes an admin kubeconfig.
 *
 * Network: a bridge of its own (`tk<pid>b`) on a 10.214.x.0/24 no interface here uses; its `.1`
 * is the node's address, where the API server and kubelet listen (pods reach them there, and any
 * server on the host bound to it or to 0.0.0.0). etcd, the controller manager's and scheduler's
 * ports are on 127.0.0.1. Every port is below 32768. There is no kube-proxy: ClusterIPs are not
 * routed; a pod reaches the API server at `apiServer` (set KUBERNETES_SERVICE_HOST/PORT to it).
 *
 * Everything lives in /tmp/telastic-kube-<pid>-XXXXXX (outside jest's TMPDIR, so that a killed run
 * is found again). stop() removes what it started, also after a start that failed half way:
 * the components, containers' shims and their processes, mounts (overlay roots, pods' network
 * namespaces, whose veths go with them), the bridge (its routes go with it) and the directory.
 * startCluster() first removes what a killed run left (directories and bridges of pids that are
 * gone).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { RunResult } from '../../test-support/agents';
import { containerdConfig, cniConflist, kubeconfig, kubeletConfig, makePki, PAUSE_IMAGE, type ClusterNet, type User } from './kube-config';
import { allowBridge, bridgeName, DIR_PREFIX, freeSubnet, ipCmd, removeEverything, run, sweepStale } from './kube-host';
import { cacheDir, lowPorts } from './temporal-cluster';

export const KUBERNETES_VERSION = '1.36.3';
export const HELM_VERSION = '3.22.0';
export const NODE_NAME = 'telastic-node';
const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'containerd', 'kubelet'] as const;
type Component = (typeof COMPONENTS)[number];

export interface KubeCluster {
  /** The cluster's directory (certificates, configs, logs, containerd's and the kubelet's state). */
  readonly dir: string;
  /** Path of an admin kubeconfig (token auth, the cluster's CA). */
  readonly kubeconfig: string;
  /** `https://<gateway>:<port>`: the API server, for the host and for pods alike. */
  readonly apiServer: string;
  /** The bridge's address: the node's IP, the host as pods see it. */
  readonly gateway: string;
  /** The pods' /24, e.g. `10.214.7.0/24`. */
  readonly podCidr: string;
  readonly bridge: string;
  /** containerd's socket (`ctr -a SOCKET -n k8s.io …`). */
  readonly containerdSocket: string;
  /** Path of the helm binary built by scripts/setup-kubernetes.sh. */
  readonly helm: string;
  /** kubectl with the admin kubeconfig; never throws for a non-zero exit. */
  kubectl(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<RunResult>;
  /** Like kubectl, but throws with the command and its last output lines when it fails. */
  must(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<string>;
  /** `ctr images import` of a `docker save` tarball into the kubelet's namespace (pods use imagePullPolicy: Never). */
  loadImage(tarball: string): Promise<void>;
  /** The last lines of a component's log. */
  logTail(component: Component, lines?: number): string;
  /** Seconds each step of the start took. */
  readonly startTimes: Record<string, number>;
  /** Removes everything it started; safe to call twice, never throws. */
  stop(): Promise<void>;
}

export function kubernetesDir(): string {
  return path.join(cacheDir(), `kubernetes-${KUBERNETES_VERSION}`);
}

/** What is missing for the Kubernetes tests, or null when all is there. */
export function kubernetesMissing(): string | null {
  if (!existsSync(path.join(kubernetesDir(), '.complete'))) return `Kubernetes ${KUBERNETES_VERSION} is not built in ${kubernetesDir()} (run scripts/setup-kubernetes.sh)`;
  if (!existsSync(helmBinary())) return `Helm ${HELM_VERSION} is not built in ${helmBinary()} (run scripts/setup-kubernetes.sh)`;
  for (const bin of ['/usr/bin/etcd', '/usr/bin/containerd', '/usr/bin/ctr', '/usr/bin/kubectl', '/usr/lib/cni/bridge']) {
    if (!existsSync(bin)) return `${bin} is missing (scripts/setup-kubernetes.sh installs Debian's packages)`;
  }
  return null;
}

const helmBinary = () => path.join(cacheDir(), `helm-${HELM_VERSION}`, 'helm');

export async function startCluster(): Promise<KubeCluster> {
  const missing = kubernetesMissing();
  if (missing) throw new Error(missing);
  const swept = sweepStale();
  if (swept.length) console.log(`kube-cluster: removed what killed runs left: ${swept.join(' ')}`);
  const bin = (name: string) => path.join(kubernetesDir(), 'bin', name);
  const dir = mkdtempSync(`${DIR_PREFIX}${process.pid}-`);
  const f = (name: string) => path.join(dir, name);
  const procs = new Map<Component, { child: ChildProcess; exited: Promise<void> }>();
  const subnet = freeSubnet();
  const [etcd, etcdPeer, apiserver, kubelet, kubeletHealthz, controllerManager, scheduler] = await lowPorts(7);
  const net: ClusterNet = {
    bridge: bridgeName(), subnet, gateway: `${subnet}.1`, serviceCidr: `${subnet.replace(/^10\.214\./, '10.215.')}.0/24`,
    ports: { etcd, etcdPeer, apiserver, kubelet, kubeletHealthz, controllerManager, scheduler },
  };
  const apiServer = `https://${net.gateway}:${apiserver}`;
  const socket = f('containerd.sock');
  const admin = f('admin.kubeconfig');
  const logFile = (c: Component) => f(`${c}.log`);
  const logTail = (c: Component, lines = 20) => (existsSync(logFile(c)) ? readFileSync(logFile(c), 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '');
  const startTimes: Record<string, number> = {};
  let t = Date.now();
  const step = (name: string) => { startTimes[name] = (Date.now() - t) / 1000; t = Date.now(); };

  const kubectl: KubeCluster['kubectl'] = (args, opts = {}) => run('/usr/bin/kubectl', ['--kubeconfig', admin, ...args], opts);
  const must: KubeCluster['must'] = async (args, opts) => {
    const r = await kubectl(args, opts);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${`${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-15).join('\n')}`);
    return r.stdout;
  };
  const ctr = (args: string[], timeoutMs = 120_000) => run('/usr/bin/ctr', ['-a', socket, '-n', 'k8s.io', ...args], { timeoutMs });
  const loadImage = async (tarball: string) => {
    const r = await ctr(['images', 'import', '--no-unpack=false', tarball], 600_000);
    if (r.code !== 0) throw new Error(`ctr images import ${tarball} exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  };

  const start = (c: Component, argv: string[]) => {
    const log = openSync(logFile(c), 'a');
    let child: ChildProcess;
    try {
      // setpriv --pdeathsig: the component dies with the test process, even when that is SIGKILLed.
      child = spawn('/usr/bin/setpriv', ['--pdeathsig', 'KILL', '--', ...argv], { cwd: dir, stdio: ['ignore', log, log] });
    } finally {
      closeSync(log);
    }
    const exited = new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.once('error', () => resolve()); });
    procs.set(c, { child, exited });
  };
  const waitUntil = async (what: string, c: Component, ok: () => Promise<boolean>, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const p = procs.get(c)?.child;
      if (p && (p.exitCode !== null || p.signalCode !== null)) throw new Error(`${c} exited while waiting for ${what} (${p.signalCode ?? `code ${p.exitCode}`}):\n${logTail(c)}`);
      if (await ok().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s:\n${logTail(c)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', lastResort);
    // The kubelet first, so nothing restarts containers; then the rest. Pods are not deleted one
    // by one: removeEverything ends their processes and unmounts their network namespaces (under
    // containerd's state dir), and a namespace's veth pair goes with it.
    for (const c of [...COMPONENTS].reverse()) {
      const p = procs.get(c);
      if (!p) continue;
      // SIGKILL: all their state is thrown away with the directory.
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
    removeEverything(dir, net.bridge);
  };
  // A process exit that skipped stop() (not a kill: the next start sweeps that).
  const lastResort = () => removeEverything(dir, net.bridge);
  process.once('exit', lastResort);

  try {
    mkdirSync(f('cni'));
    ipCmd('link', 'add', net.bridge, 'type', 'bridge');
    ipCmd('addr', 'add', `${net.gateway}/24`, 'dev', net.bridge);
    ipCmd('link', 'set', net.bridge, 'up');
    allowBridge(net.bridge);
    const pki = makePki(dir, net);
    const kc = (u: User) => { const p = f(`${u}.kubeconfig`); writeFileSync(p, kubeconfig(apiServer, pki.ca, pki.tokens[u]), { mode: 0o600 }); return p; };
    kc('admin');
    step('certificates');

    start('etcd', ['/usr/bin/etcd', '--name', 'telastic-test', '--data-dir', f('etcd'),
      '--listen-client-urls', `http://127.0.0.1:${etcd}`, '--advertise-client-urls', `http://127.0.0.1:${etcd}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `telastic-test=http://127.0.0.1:${etcdPeer}`, '--listen-metrics-urls', '', '--log-level', 'warn']);
    await waitUntil('etcd healthy', 'etcd', async () => (await fetch(`http://127.0.0.1:${etcd}/health`)).ok, 60_000);
    step('etcd');

    start('kube-apiserver', [bin('kube-apiserver'), `--etcd-servers=http://127.0.0.1:${etcd}`,
      `--bind-address=${net.gateway}`, `--advertise-address=${net.gateway}`, `--secure-port=${apiserver}`,
      `--tls-cert-file=${pki.apiserverCert}`, `--tls-private-key-file=${pki.apiserverKey}`, `--client-ca-file=${pki.ca}`,
      `--token-auth-file=${f('tokens.csv')}`, '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountKey}`, `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${net.serviceCidr}`, '--allow-privileged=true', '--profiling=false',
      // kubectl logs: the API server reaches the kubelet at the node's InternalIP, with a client cert.
      '--kubelet-preferred-address-types=InternalIP',
      `--kubelet-client-certificate=${pki.kubeletClientCert}`, `--kubelet-client-key=${pki.kubeletClientKey}`]);
    await waitUntil('kube-apiserver ready', 'kube-apiserver', async () => (await kubectl(['get', '--raw', '/readyz'], { timeoutMs: 10_000 })).stdout.trim() === 'ok', 180_000);
    step('kube-apiserver');

    start('kube-controller-manager', [bin('kube-controller-manager'), `--kubeconfig=${kc('controller-manager')}`,
      `--authentication-kubeconfig=${kc('controller-manager')}`, `--authorization-kubeconfig=${kc('controller-manager')}`,
      '--bind-address=127.0.0.1', `--secure-port=${controllerManager}`, '--leader-elect=false',
      // The legacy token controller needs the signing key; tokens are projected (TokenRequest) anyway.
      "--controllers=*,-serviceaccount-token", `--root-ca-file=${pki.ca}`, `--service-cluster-ip-range=${net.serviceCidr}`,
      '--use-service-account-credentials=false',
      // The HPA looks every 5 s, not every 15 s: the autoscaling case waits for it twice.
      '--horizontal-pod-autoscaler-sync-period=5s']);
    start('kube-scheduler', [bin('kube-scheduler'), `--kubeconfig=${kc('scheduler')}`,
      `--authentication-kubeconfig=${kc('scheduler')}`, `--authorization-kubeconfig=${kc('scheduler')}`,
      '--bind-address=127.0.0.1', `--secure-port=${scheduler}`, '--leader-elect=false']);

    writeFileSync(f('containerd.toml'), containerdConfig(dir, f('cni'), PAUSE_IMAGE(KUBERNETES_VERSION)));
    writeFileSync(f('cni/10-telastic.conflist'), cniConflist(net, f('cni-ipam')));
    start('containerd', ['/usr/bin/containerd', '--config', f('containerd.toml'), '--log-level', 'warn']);
    await waitUntil('containerd answering', 'containerd', async () => (await ctr(['version'], 5_000)).code === 0, 60_000);
    await loadImage(path.join(kubernetesDir(), 'pause.tar'));
    step('containerd');

    writeFileSync(f('kubelet.yaml'), kubeletConfig({ net, pki, socket, podLogsDir: f('pod-logs'), volumePluginDir: f('volume-plugins') }));
    start('kubelet', [bin('kubelet'), `--config=${f('kubelet.yaml')}`, `--kubeconfig=${kc('kubelet')}`, `--root-dir=${f('kubelet')}`,
      `--node-ip=${net.gateway}`, `--hostname-override=${NODE_NAME}`, '--v=1']);
    await waitUntil(`node ${NODE_NAME} Ready`, 'kubelet', async () =>
      (await kubectl(['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'], { timeoutMs: 10_000 })).stdout.trim() === 'True', 180_000);
    step('kubelet');
    await waitUntil('service account default/default', 'kube-controller-manager', async () =>
      (await kubectl(['get', 'serviceaccount', 'default', '-o', 'name'], { timeoutMs: 10_000 })).code === 0, 60_000);
    step('service account');
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    dir, kubeconfig: admin, apiServer, gateway: net.gateway, podCidr: `${net.subnet}.0/24`, bridge: net.bridge, containerdSocket: socket,
    helm: helmBinary(), kubectl, must, loadImage, logTail, startTimes, stop,
  };
}
