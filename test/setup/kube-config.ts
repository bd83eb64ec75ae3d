/**
 * The files a test cluster (test/setup/kube-cluster.ts) runs on: certificates, the API server's
 * token file, kubeconfigs, containerd's config, the CNI bridge conflist and the kubelet's config.
 * Only text and openssl here; the cluster file starts the processes. The settings that matter on
 * this machine are in ../shared/notes/kubernetes-here.md and are marked below.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** Addresses and ports of one cluster: everything on loopback or on its own bridge. */
export interface ClusterNet {
  /** The bridge pods sit on (`tk<pid>b`). */
  bridge: string;
  /** `10.214.x`: pods get `.2` and up, the bridge (the host as pods see it, the node's IP) `.1`. */
  subnet: string;
  /** The bridge's own address: node IP, kubelet's and the API server's listening address. */
  gateway: string;
  /** `10.215.x.0/24`: ClusterIPs (no kube-proxy here: nothing routes them). */
  serviceCidr: string;
  ports: { etcd: number; etcdPeer: number; apiserver: number; kubelet: number; kubeletHealthz: number; controllerManager: number; scheduler: number };
}

/** Who talks to the API server, each with a static token (`--token-auth-file`). */
export const USERS = ['admin', 'kubelet', 'controller-manager', 'scheduler'] as const;
export type User = (typeof USERS)[number];

export interface Pki {
  ca: string;
  apiserverCert: string;
  apiserverKey: string;
  /** The API server's client certificate towards the kubelet (the kubelet trusts only the CA). */
  kubeletClientCert: string;
  kubeletClientKey: string;
  kubeletCert: string;
  kubeletKey: string;
  /** One RSA key signs and verifies service-account tokens. */
  serviceAccountKey: string;
  tokens: Record<User, string>;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA, the API server's and kubelet's serving certificates, a client cert, the SA key, tokens. */
export function makePki(dir: string, net: ClusterNet): Pki {
  const f = (name: string) => path.join(dir, name);
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=telastic-test-ca']);
  const sign = (name: string, subj: string, ext: string) => {
    writeFileSync(f(`${name}.ext`), ext);
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', subj]);
    openssl(['x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f(`${name}.crt`), '-extfile', f(`${name}.ext`)]);
  };
  const firstService = net.serviceCidr.replace(/\.0\/24$/, '.1');
  const sans = ['DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local', 'DNS:localhost',
    'IP:127.0.0.1', `IP:${net.gateway}`, `IP:${firstService}`];
  sign('apiserver', '/CN=kube-apiserver', `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth\n`);
  sign('kubelet', '/CN=telastic-node', `subjectAltName=IP:${net.gateway},DNS:localhost\nextendedKeyUsage=serverAuth\n`);
  sign('kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth\n');
  openssl(['genrsa', '-out', f('sa.key'), '2048']);
  const tokens = Object.fromEntries(USERS.map((u) => [u, randomBytes(24).toString('hex')])) as Record<User, string>;
  // Every component is in system:masters (a test cluster; RBAC still governs service accounts,
  // which is what the chart's and operator's RBAC is about).
  writeFileSync(f('tokens.csv'), USERS.map((u) => `${tokens[u]},${u === 'kubelet' ? 'system:node:telastic-node' : u},${u},"system:masters"`).join('\n') + '\n', { mode: 0o600 });
  return {
    ca: f('ca.crt'), apiserverCert: f('apiserver.crt'), apiserverKey: f('apiserver.key'),
    kubeletClientCert: f('kubelet-client.crt'), kubeletClientKey: f('kubelet-client.key'),
    kubeletCert: f('kubelet.crt'), kubeletKey: f('kubelet.key'), serviceAccountKey: f('sa.key'), tokens,
  };
}

export function kubeconfig(server: string, ca: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: telastic-test
  cluster:
    server: ${server}
    certificate-authority: ${ca}
users:
- name: telastic-test
  user:
    token: ${token}
contexts:
- name: telastic-test
  context:
    cluster: telastic-test
    user: telastic-test
    namespace: default
current-context: telastic-test
`;
}

export const PAUSE_IMAGE = (version: string) => `telastic.test/pause:${version}`;

/** containerd 1.6 for this cluster only: own root, state, socket, CNI dirs; nothing of the host's. */
export function containerdConfig(dir: string, cniConfDir: string, pauseImage: string): string {
  return `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
oom_score = 0
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # The sandbox ("pause") container: a local image, no registry here.
  sandbox_image = "${pauseImage}"
  # This machine refuses a negative oom_score_adj: without this every sandbox fails in runc.
  restrict_oom_score_adj = true
  # Pods' network namespaces under the state dir, so that stop() finds them all.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${cniConfDir}"
    max_conf_num = 1
`;
}

/**
 * The pod network: a bridge with the gateway address, host-local IPAM on the cluster's /24 (its
 * state in the cluster's dir). No ipMasq and no portmap: pods need nothing beyond this machine,
 * so the plugins add no iptables rules that a killed run could leave behind.
 */
export function cniConflist(net: ClusterNet, ipamDir: string): string {
  return JSON.stringify({
    cniVersion: '0.4.0',
    name: 'telastic-test',
    plugins: [{
      type: 'bridge', bridge: net.bridge, isGateway: true, ipMasq: false, hairpinMode: true,
      ipam: { type: 'host-local', dataDir: ipamDir, ranges: [[{ subnet: `${net.subnet}.0/24`, gateway: net.gateway }]], routes: [{ dst: '0.0.0.0/0' }] },
    }],
  }, null, 2);
}

export function kubeletConfig(o: { net: ClusterNet; pki: Pki; socket: string; podLogsDir: string; volumePluginDir: string }): string {
  const { net, pki } = o;
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This host: cgroup v1 with the cgroupfs driver, no QoS cgroups, no allocatable enforcement.
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
# No evictions and no image GC: imported images cannot be pulled again.
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerRuntimeEndpoint: unix://${o.socket}
podCIDR: ${net.subnet}.0/24
address: ${net.gateway}
port: ${net.ports.kubelet}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${net.ports.kubeletHealthz}
tlsCertFile: ${pki.kubeletCert}
tlsPrivateKeyFile: ${pki.kubeletKey}
# Only the API server (its client certificate from the cluster's CA) talks to the kubelet.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ${pki.ca}}
authorization:
  mode: AlwaysAllow
podLogsDir: ${o.podLogsDir}
volumePluginDir: ${o.volumePluginDir}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
nodeStatusUpdateFrequency: 4s
serializeImagePulls: false
`;
}
