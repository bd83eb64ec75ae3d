/**
 * A private dockerd for one test file (test/e2e/image.test.ts, compose.test.ts), so a test never
 * touches a Docker the machine runs for anything else, and can remove all it made:
 *   - its own socket and exec root in a temp dir, and its data root in the versioned cache
 *     (`$CACHE/dockerd`, so the build cache and the imported base images outlive the run);
 *   - no iptables rules, no default bridge, no ip_forward change: the host's firewall and
 *     sysctls stay as they were. Builds use the host's network (`npm ci` reaches the registry);
 *     compose's own networks are bridges without NAT, and published ports are docker-proxy
 *     listeners on the host.
 * With no NAT the host's own resolver is out of the containers' reach, and Docker's embedded DNS
 * would forward every query it cannot answer (an AAAA for a service name, say) there and wait,
 * which stalls gRPC's resolver in the Temporal CLI for its whole deadline. So the daemon's `--dns`
 * is a tiny responder of the test's own on the host's address: single-label names get NXDOMAIN
 * at once, dotted ones (the registry, for a build's `npm ci`) are relayed to the host's resolver.
 * At start it removes every container, network and volume an earlier run left (a run killed
 * before its cleanup): everything in this daemon is the tests'.
 *
 * The compose plugin (scripts/setup-docker.sh) is found through DOCKER_CONFIG's cli-plugins.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunResult } from '../../test-support/agents';
import { cacheDir } from './temporal-cluster';

export const COMPOSE_VERSION = '5.7.1';
export const NPM_VERSION = '11.19.1';
const BASES_KEY = `trixie-bookworm-npm${NPM_VERSION}-2`;

export interface TestDocker {
  /** DOCKER_HOST and DOCKER_CONFIG for this daemon, over the test process's own environment. */
  readonly env: NodeJS.ProcessEnv;
  /** Runs the docker CLI against this daemon; never throws for a non-zero exit. */
  docker(args: string[], opts?: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RunResult>;
  /** Like `docker`, but throws with the command and its last stderr lines when it fails. */
  must(args: string[], opts?: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<string>;
  /** The base images from scripts/setup-docker.sh, imported once: `node` (Node 20, npm, tini) and `pg` (PostgreSQL 15). */
  base(name: 'node' | 'pg'): Promise<string>;
  /** The daemon's log, for a failure message. */
  logTail(lines?: number): string;
  /** Stops the daemon (its containerd with it) and removes the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

/** What is missing for Docker tests, or null when dockerd, the compose plugin and the bases are there. */
export function dockerMissing(): string | null {
  if (!findBinary('dockerd')) return 'dockerd is not installed (scripts/setup-docker.sh installs Debian\'s docker.io)';
  if (!existsSync(composeBinary())) return `docker compose ${COMPOSE_VERSION} is not built in ${composeBinary()} (run scripts/setup-docker.sh)`;
  if (!existsSync(path.join(basesDir(), '.complete'))) return `the base images are not built in ${basesDir()} (run scripts/setup-docker.sh)`;
  return null;
}

const composeBinary = () => path.join(cacheDir(), `docker-compose-${COMPOSE_VERSION}`, 'docker-compose');
const basesDir = () => path.join(cacheDir(), `docker-bases-${BASES_KEY}`);

function findBinary(name: string): string | null {
  for (const dir of ['/usr/bin', '/usr/sbin', ...(process.env.PATH ?? '').split(':')]) {
    const p = path.join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return null;
}

/**
 * A DNS server on the host's first non-loopback IPv4 address, port 53, for the daemon's `--dns`.
 * A single-label name (a compose service's AAAA, a bare host name) gets NXDOMAIN at once, the
 * question echoed as resolvers expect. A dotted name is asked of the host's own resolver (the
 * first `nameserver` of /etc/resolv.conf), so that a build's `npm ci` finds the registry; no
 * answer within 2 s is NXDOMAIN too, so nothing waits on a resolver that does not answer.
 */
async function startDnsResponder(): Promise<{ address: string; close(): void }> {
  const address = Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  if (!address) throw new Error('no non-loopback IPv4 address on this host for the containers\' DNS');
  const upstream = hostNameserver();
  const sock = dgram.createSocket('udp4');
  const relay = dgram.createSocket('udp4');
  // Questions asked upstream, by the id they were sent with: who asked, with which id.
  const asked = new Map<number, { id: number; port: number; address: string; timer: NodeJS.Timeout }>();
  let nextId = 0;
  const nxdomain = (q: Buffer, end: number) =>
    Buffer.concat([Buffer.from([q[0], q[1], 0x80 | (q[2] & 0x01), 0x83, q[4], q[5], 0, 0, 0, 0, 0, 0]), q.subarray(12, end + 5)]);
  const withId = (m: Buffer, id: number) => {
    const out = Buffer.from(m);
    out.writeUInt16BE(id, 0);
    return out;
  };
  sock.on('message', (q, from) => {
    if (q.length < 12) return;
    let end = 12; // the first question: labels up to the root, then type and class
    let labels = 0;
    while (end < q.length && q[end] !== 0) {
      end += q[end] + 1;
      labels++;
    }
    if (end + 5 > q.length) return;
    if (labels < 2 || upstream === null || asked.size >= 256) {
      sock.send(nxdomain(q, end), from.port, from.address);
      return;
    }
    do nextId = (nextId + 1) & 0xffff; while (asked.has(nextId));
    const key = nextId;
    const timer = setTimeout(() => {
      asked.delete(key);
      sock.send(nxdomain(q, end), from.port, from.address);
    }, 2_000);
    asked.set(key, { id: q.readUInt16BE(0), port: from.port, address: from.address, timer });
    relay.send(withId(q, key), 53, upstream);
  });
  relay.on('message', (answer) => {
    const a = answer.length >= 12 ? asked.get(answer.readUInt16BE(0)) : undefined;
    if (!a) return;
    asked.delete(answer.readUInt16BE(0));
    clearTimeout(a.timer);
    sock.send(withId(answer, a.id), a.port, a.address);
  });
  relay.on('error', () => {}); // an unreachable upstream: the askers get their NXDOMAIN after 2 s
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(53, address, () => resolve());
  });
  await new Promise<void>((resolve) => relay.bind(0, () => resolve()));
  sock.unref();
  relay.unref();
  return {
    address,
    close: () => {
      for (const a of asked.values()) clearTimeout(a.timer);
      sock.close();
      relay.close();
    },
  };
}

/** The host's resolver: the first IPv4 nameserver of /etc/resolv.conf, if any. */
function hostNameserver(): string | null {
  try {
    const m = readFileSync('/etc/resolv.conf', 'utf8').match(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/m);
    return m ? m[1] : null;
  } catch {
    return null;
  }
}

/** Lazily unmounts every mount below `dir`, deepest first. */
function unmountUnder(dir: string): void {
  const points = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1]).filter((m) => m && m.startsWith(`${dir}/`));
  for (const m of points.sort((a, b) => b.length - a.length)) execFileSync('umount', ['-l', m]);
}

export async function startDocker(): Promise<TestDocker> {
  const missing = dockerMissing();
  if (missing) throw new Error(missing);
  const dockerd = findBinary('dockerd') as string;
  // The CLI next to dockerd (Debian's, the daemon's own version) before any other on PATH.
  const cli = existsSync(path.join(path.dirname(dockerd), '..', 'bin', 'docker')) ? path.join(path.dirname(dockerd), '..', 'bin', 'docker') : 'docker';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-dockerd-'));
  const config = path.join(dir, 'config');
  mkdirSync(path.join(config, 'cli-plugins'), { recursive: true });
  symlinkSync(composeBinary(), path.join(config, 'cli-plugins', 'docker-compose'));
  const dataRoot = path.join(cacheDir(), 'dockerd');
  mkdirSync(dataRoot, { recursive: true });
  const socket = path.join(dir, 'docker.sock');
  const logFile = path.join(dir, 'dockerd.log');
  const env = { ...process.env, DOCKER_HOST: `unix://${socket}`, DOCKER_CONFIG: config, DOCKER_CLI_HINTS: 'false', BUILDKIT_PROGRESS: 'plain' };
  const logTail = (lines = 20) => (existsSync(logFile) ? readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '');

  const dns = await startDnsResponder();
  const log = openSync(logFile, 'a');
  let proc: ChildProcess;
  try {
    proc = spawn(dockerd, [
      '--host', `unix://${socket}`, '--data-root', dataRoot, '--exec-root', path.join(dir, 'exec'),
      '--pidfile', path.join(dir, 'dockerd.pid'), '--iptables=false', '--ip-forward=false', '--ip-masq=false',
      '--bridge=none', '--userland-proxy=true', '--storage-driver=overlay2', '--dns', dns.address,
    ], { stdio: ['ignore', log, log], detached: true });
  } finally {
    closeSync(log);
  }
  const exited = new Promise<void>((resolve) => { proc.once('exit', () => resolve()); proc.once('error', () => resolve()); });
  let stopped = false;

  const docker: TestDocker['docker'] = (args, opts = {}) => new Promise((resolve) => {
    execFile(cli, args, { cwd: opts.cwd, env: { ...env, ...opts.env }, timeout: opts.timeoutMs ?? 600_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
  const must: TestDocker['must'] = async (args, opts) => {
    const r = await docker(args, opts);
    if (r.code !== 0) throw new Error(`docker ${args.join(' ')} exited ${r.code}: ${`${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-15).join('\n')}`);
    return r.stdout;
  };
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => { try { process.kill(-(proc.pid as number), 'SIGKILL'); } catch { /* gone */ } }, 20_000);
      await exited;
      clearTimeout(timer);
    }
    dns.close();
    unmountUnder(dir); // the default netns dockerd bind-mounts into its exec root, if it left it
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`dockerd exited at start:\n${logTail()}`);
      if ((await docker(['version', '--format', '{{.Server.Version}}'], { timeoutMs: 5_000 })).code === 0) break;
      if (Date.now() > deadline) throw new Error(`dockerd did not answer on ${socket} within 60 s:\n${logTail()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    // What an earlier run left behind (it was killed before its own cleanup).
    const left = (await must(['ps', '-aq'])).split('\n').filter(Boolean);
    if (left.length) await must(['rm', '-f', '-v', ...left]);
    await must(['network', 'prune', '-f']);
    await must(['volume', 'prune', '-f']);
  } catch (err) {
    await stop();
    throw err;
  }

  const imported = new Map<string, Promise<string>>();
  const base: TestDocker['base'] = (name) => {
    const tag = `telastic-base/${name}:${BASES_KEY}`;
    if (!imported.has(tag)) {
      imported.set(tag, (async () => {
        // The system bundle (with the CAs the host added, scripts/setup-docker.sh) for Node too.
        const change = ['--change', 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'];
        if ((await docker(['image', 'inspect', tag])).code !== 0) await must(['import', ...change, path.join(basesDir(), `${name}.tar`), tag]);
        return tag;
      })());
    }
    return imported.get(tag) as Promise<string>;
  };
  return { env, docker, must, base, logTail, stop };
}
