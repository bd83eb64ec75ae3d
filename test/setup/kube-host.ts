/**
 * The host side of a test cluster (test/setup/kube-cluster.ts): its bridge and subnet, ports, a
 * process runner, and the removal of everything a cluster leaves on the machine: processes
 * (the components, containerd's shims and the containers under them), mounts below its
 * directory (overlay roots, pods' network namespaces and volumes), the bridge and its FORWARD
 * rule, and the directory. Names carry the test process's pid (`tk<pid>b`,
 * /tmp/telastic-kube-<pid>-XXXXXX), so what a killed run left is told apart from a live one's.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { RunResult } from '../../test-support/agents';

export const DIR_PREFIX = '/tmp/telastic-kube-';
export const bridgeName = (pid = process.pid) => `tk${pid}b`;

export function ipCmd(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `cmd args…` to its end (or `timeoutMs`, then SIGKILL): exit code (-1 when killed) and output. */
export function run(cmd: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.once('error', (err) => { clearTimeout(timer); resolve({ code: -1, stdout, stderr: stderr + err.message }); });
    child.once('close', (code) => { clearTimeout(timer); resolve({ code: code ?? -1, stdout, stderr }); });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** A /24 in 10.214.0.0/16 that no address or route of this host is on. */
export function freeSubnet(): string {
  const used = ipCmd('-o', '-4', 'addr', 'show') + ipCmd('-4', 'route', 'show');
  for (let i = 0; i < 254; i++) {
    const x = ((process.pid + i) % 254) + 1;
    if (!used.includes(`10.214.${x}.`)) return `10.214.${x}`;
  }
  throw new Error('kube-cluster: no free /24 in 10.214.0.0/16');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `pid` is a process that has not ended (a zombie has: it waits only to be reaped). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Pids whose command line mentions `dir` (components, shims), and the shims' children (containers). */
export function processesOf(dir: string): number[] {
  const found = new Set<number>();
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) found.add(pid);
      parents.set(pid, Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[1]));
    } catch { /* gone */ }
  }
  // Descendants of what was found (a container's init: its pid namespace ends with it).
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of parents) if (found.has(ppid) && !found.has(pid)) { found.add(pid); grew = true; }
  }
  return [...found];
}

/** Mount points at or below `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((m) => m && (m === dir || m.startsWith(`${dir}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

const forwardRule = (bridge: string) => ['FORWARD', '-i', bridge, '-o', bridge, '-j', 'ACCEPT'];

/**
 * On a host whose iptables FORWARD policy is DROP (Docker's), bridged frames between pods pass
 * that chain (br_netfilter): one rule lets the bridge's own traffic through; it goes with it.
 */
export function allowBridge(bridge: string): void {
  spawnSync('iptables', ['-I', ...forwardRule(bridge)]);
}

/** Everything a cluster in `dir` with bridge `bridge` left on this machine; never throws. */
export function removeEverything(dir: string, bridge: string): void {
  const pids = processesOf(dir);
  for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  const deadline = Date.now() + 10_000;
  while (pids.some(running) && Date.now() < deadline) spawnSync('sleep', ['0.1']);
  for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
  while (spawnSync('iptables', ['-C', ...forwardRule(bridge)]).status === 0) spawnSync('iptables', ['-D', ...forwardRule(bridge)]);
  spawnSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** What clusters of killed test runs left (their pid is gone): directories and bridges. */
export function sweepStale(): string[] {
  const gone: string[] = [];
  for (const name of readdirSync(path.dirname(DIR_PREFIX))) {
    const m = new RegExp(`^${path.basename(DIR_PREFIX)}(\\d+)-`).exec(name);
    if (!m || alive(Number(m[1]))) continue;
    const bridge = bridgeName(Number(m[1]));
    const hadBridge = spawnSync('ip', ['link', 'show', bridge], { stdio: 'ignore' }).status === 0;
    removeEverything(path.join(path.dirname(DIR_PREFIX), name), bridge);
    gone.push(name, ...(hadBridge ? [bridge] : []));
  }
  const links = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? '';
  for (const link of links.split('\n').map((l) => /^\d+: (tk(\d+)b)[:@]/.exec(l)).filter((m) => m && !alive(Number(m[2])))) {
    removeEverything(`${DIR_PREFIX}${(link as RegExpExecArray)[2]}-none`, (link as RegExpExecArray)[1]);
    gone.push((link as RegExpExecArray)[1]);
  }
  return gone;
}
