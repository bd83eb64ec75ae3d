/**
 * Real agents for end-to-end tests: `node bin/telastic.js run …` child processes against the
 * test's Temporal server, with the stand-in worker of test/fixtures/worker.py.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { getJobStatus } from '../../src/client/api';
import type { JobStatus } from '../../src/job/status';

export const ROOT = path.resolve(__dirname, '..', '..');
export const BIN = path.join(ROOT, 'bin', 'telastic.js');
export const WORKER = path.join(ROOT, 'test', 'fixtures', 'worker.py');

export interface Agent {
  nodeId: string;
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** An environment without the variables a test unset (given as undefined). */
function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

export function tmpDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `telastic-${prefix}-`));
}

let seq = 0;
export function uniqueJobId(name: string): string {
  return `${name}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
}

/** Start `telastic run` with `args` (its flags and the script) as a real child process. */
export function startAgent(address: string, nodeId: string, args: string[], env: NodeJS.ProcessEnv = {}): Agent {
  const proc = spawn(process.execPath, [BIN, 'run', '--rdzv-endpoint', address, '--node-id', nodeId, '--local-addr', '127.0.0.1', ...args], {
    env: definedOnly({ ...process.env, TELASTIC_STATE_DIR: path.join(os.tmpdir(), 'telastic-test-state', nodeId), ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  return { nodeId, proc, output: () => out, exited };
}

/** Poll until `fn` returns a truthy value; fail with `what` and the last error after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 60_000, everyMs = 200): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The job's status; a query that a frozen coordinator swallowed fails after 3 s (and is retried by waitFor). */
export async function status(conn: Connection, jobId: string): Promise<JobStatus> {
  return conn.withDeadline(Date.now() + 3000, () => getJobStatus({ connection: conn }, jobId));
}

/** Wait until the job runs a round matching `pred`. */
export function waitForRound(conn: Connection, jobId: string, pred: (s: JobStatus) => boolean, timeoutMs = 60_000): Promise<JobStatus> {
  return waitFor(`job ${jobId} round`, async () => {
    const s = await status(conn, jobId);
    return s.state === 'running' && pred(s) ? s : null;
  }, timeoutMs);
}

/** Environments the fixture workers recorded, keyed `round.node.rank`. */
export function recordedEnvs(out: string): Map<string, Record<string, string>> {
  const m = new Map<string, Record<string, string>>();
  if (!existsSync(out)) return m;
  for (const f of readdirSync(out)) {
    const match = /^env\.(.+)\.json$/.exec(f);
    if (match) m.set(match[1], JSON.parse(readFileSync(path.join(out, f), 'utf8')) as Record<string, string>);
  }
  return m;
}

/** Pids the fixture workers recorded for a round (all rounds when omitted). */
export function recordedPids(out: string, round?: number): number[] {
  if (!existsSync(out)) return [];
  return readdirSync(out)
    .filter((f) => f.startsWith('pid.') && (round === undefined || f.startsWith(`pid.${round}.`)))
    .map((f) => Number(readFileSync(path.join(out, f), 'utf8')));
}

export function finish(out: string): void {
  writeFileSync(path.join(out, 'finish'), '');
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function stopAll(agents: Agent[]): Promise<unknown> {
  for (const a of agents) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
  return Promise.all(agents.map((a) => a.exited));
}

/** Fast timings for tests: a node is noticed lost after 3 s instead of 10. */
export const FAST_RDZV = ['--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=1,join_timeout=60,prepare_timeout=3', '--shutdown-timeout', '3', '--monitor-interval', '0.1'];
