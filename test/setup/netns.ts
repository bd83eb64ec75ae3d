/**
 * Test hosts on this machine: one network namespace per host, each with a veth pair whose
 * root-side end sits on a bridge, on a private /24 (10.213.x.0/24, the first x no interface here
 * uses). The root namespace reaches the hosts at the bridge address (`serverIp`), so a server bound
 * to 0.0.0.0 serves them. `cut(host)` sets the host's root-side veth down (its link is gone, as a
 * pulled cable: packets are dropped, nothing is refused), `heal(host)` sets it up again.
 *
 * Needs root (CAP_NET_ADMIN and the right to mount /run/netns). Every name starts with
 * `tl<pid>` (at most 15 characters for interfaces), so parallel test runs never share one, and
 * `destroy()` removes all of it, ending processes still inside the namespaces, also after a setup
 * that failed half way, and runs by itself on a process exit that skipped it (not on a kill).
 * What a killed run left behind (Ctrl-C on jest) is removed by the next `makeHosts`: names whose
 * `tl<pid>` is no running process.
 */
import { execFileSync, spawnSync } from 'node:child_process';

export interface TestHost {
  /** Namespace name (`ip netns exec NS …`). */
  readonly ns: string;
  /** The host's address on the bridge. */
  readonly ip: string;
  /** Root-side end of its veth pair: what `cut` sets down. */
  readonly veth: string;
}

export interface TestHosts {
  readonly hosts: readonly TestHost[];
  /** The bridge's address: the root namespace as the hosts see it. */
  readonly serverIp: string;
  readonly bridge: string;
  /** argv that runs `cmd` inside the host's namespace (ip netns exec execs: the pid is cmd's). */
  exec(host: TestHost, cmd: readonly string[]): string[];
  cut(host: TestHost): void;
  heal(host: TestHost): void;
  /** Ends processes left in the namespaces and deletes namespaces, veths and bridge; never throws. */
  destroy(): void;
}

const prefix = `tl${process.pid}`;

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why this machine cannot make test hosts (e.g. not root), or null when it can. */
export function netnsRefusal(): string | null {
  const probe = `${prefix}probe`;
  const add = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (add.error) return `ip netns add: ${add.error.message}`;
  if (add.status !== 0) return `ip netns add refused: ${add.stderr.trim() || `exit ${add.status}`}`;
  spawnSync('ip', ['netns', 'del', probe]);
  return null;
}

/** A /24 in 10.213.0.0/16 that no interface of the root namespace is on yet. */
function freeSubnet(): string {
  const used = ip('-o', '-4', 'addr', 'show');
  for (let i = 0; i < 254; i++) {
    const x = ((process.pid + i) % 254) + 1;
    if (!used.includes(` 10.213.${x}.`)) return `10.213.${x}`;
  }
  throw new Error('makeHosts: no free /24 in 10.213.0.0/16');
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `name` is a test host's, bridge's or veth's of a run whose process is gone. */
function stale(name: string): boolean {
  const pid = /^tl(\d+)/.exec(name)?.[1];
  return pid !== undefined && !running(Number(pid));
}

/** Namespaces, veths and bridges of runs that were killed before their destroy(); never throws. */
export function sweepStale(): string[] {
  const list = (args: string[]) => spawnSync('ip', args, { encoding: 'utf8' }).stdout ?? '';
  const gone: string[] = [];
  for (const ns of list(['netns', 'list']).split('\n').map((l) => l.split(' ')[0]).filter(stale)) {
    for (const pid of list(['netns', 'pids', ns]).split(/\s+/).filter(Boolean)) try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
    if (spawnSync('ip', ['netns', 'del', ns]).status === 0) gone.push(ns);
  }
  // FORWARD rules of killed runs' bridges (makeHosts).
  for (const rule of (spawnSync('iptables', ['-S', 'FORWARD'], { encoding: 'utf8' }).stdout ?? '').split('\n')) {
    const m = /^-A FORWARD -i (tl\S+) -o \1 -j ACCEPT$/.exec(rule.trim());
    if (m && stale(m[1])) spawnSync('iptables', ['-D', 'FORWARD', '-i', m[1], '-o', m[1], '-j', 'ACCEPT']);
  }
  // Deleting a namespace deletes its veth pairs; what is left is bridges and unpaired ends.
  for (const link of list(['-o', 'link', 'show']).split('\n').map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1] ?? '').filter(stale)) {
    if (spawnSync('ip', ['link', 'del', link]).status === 0) gone.push(link);
  }
  return gone;
}

/** `n` hosts on one bridge; throws (after removing what it made) when a step fails. */
export function makeHosts(n: number): TestHosts {
  if (n < 1 || n > 9) throw new Error(`makeHosts: ${n} hosts (1..9)`);
  const swept = sweepStale();
  if (swept.length > 0) console.log(`makeHosts: removed what killed test runs left: ${swept.join(' ')}`);
  const net = freeSubnet();
  const bridge = `${prefix}br`;
  const hosts: TestHost[] = Array.from({ length: n }, (_, i) => ({ ns: `${prefix}n${i}`, ip: `${net}.${i + 2}`, veth: `${prefix}v${i}` }));
  const made = { bridge: false, forward: false, hosts: [] as TestHost[] };
  // On a machine with Docker, bridged frames pass iptables' FORWARD chain (br_netfilter), whose
  // policy Docker sets to DROP: host-to-host traffic on the bridge would vanish. One rule lets this
  // bridge's own traffic through; it goes with the bridge.
  const forwardRule = ['FORWARD', '-i', bridge, '-o', bridge, '-j', 'ACCEPT'];

  const destroy = () => {
    for (const h of made.hosts) {
      const pids = spawnSync('ip', ['netns', 'pids', h.ns], { encoding: 'utf8' }).stdout ?? '';
      for (const pid of pids.split(/\s+/).filter(Boolean)) try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
      spawnSync('ip', ['link', 'del', h.veth]);
      spawnSync('ip', ['netns', 'del', h.ns]);
    }
    made.hosts = [];
    if (made.forward) spawnSync('iptables', ['-D', ...forwardRule]);
    made.forward = false;
    if (made.bridge) spawnSync('ip', ['link', 'del', bridge]);
    made.bridge = false;
    process.removeListener('exit', destroy);
  };
  // Also when the process exits without calling it (process.exit; not when killed by a signal).
  process.once('exit', destroy);

  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    made.bridge = true;
    ip('addr', 'add', `${net}.1/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    // No iptables (so no Docker): nothing filters the bridge.
    made.forward = spawnSync('iptables', ['-I', ...forwardRule]).status === 0;
    for (const [i, h] of hosts.entries()) {
      ip('netns', 'add', h.ns);
      made.hosts.push(h);
      const peer = `${prefix}p${i}`;
      ip('link', 'add', h.veth, 'type', 'veth', 'peer', 'name', peer);
      ip('link', 'set', peer, 'netns', h.ns);
      ip('-n', h.ns, 'link', 'set', peer, 'name', 'eth0');
      ip('-n', h.ns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0');
      ip('-n', h.ns, 'link', 'set', 'eth0', 'up');
      ip('-n', h.ns, 'link', 'set', 'lo', 'up');
      ip('link', 'set', h.veth, 'master', bridge);
      ip('link', 'set', h.veth, 'up');
    }
  } catch (err) {
    destroy();
    throw err;
  }

  return {
    hosts,
    serverIp: `${net}.1`,
    bridge,
    exec: (h, cmd) => ['ip', 'netns', 'exec', h.ns, ...cmd],
    cut: (h) => void ip('link', 'set', h.veth, 'down'),
    heal: (h) => void ip('link', 'set', h.veth, 'up'),
    destroy,
  };
}
