/**
 * Real `telastic` processes (agents, controllers) as child processes, and polling helpers.
 * Shared by the end-to-end tests (test/e2e/harness.ts) and the benchmarks (bench/), so that
 * neither depends on the other. Outside src/, which is the product, and outside test/, which
 * `tsc -p .` does not build while the benchmarks run from lib/.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { findProjectRoot } from '../src/temporal/binary';

export const ROOT = findProjectRoot(__dirname);
export const BIN = path.join(ROOT, 'bin', 'telastic.js');

export interface Agent {
  nodeId: string;
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** An environment without the variables a caller unset (given as undefined). */
export function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** Start `telastic run` with `args` (its flags and the script) against the Temporal at `address`. */
export function startAgent(address: string, nodeId: string, args: string[], env: NodeJS.ProcessEnv = {}): Agent {
  return startTelastic(nodeId, ['run', ...(address ? ['--rdzv-endpoint', address] : []), '--node-id', nodeId, '--local-addr', '127.0.0.1', ...args], env);
}

/**
 * Start `telastic ARGS…` (any command); `name` keeps its state directory apart from others'.
 * `launcher` runs it through another command that execs it (e.g. `ip netns exec NS`), so the
 * child's pid is still the agent's.
 */
export function startTelastic(name: string, args: string[], env: NodeJS.ProcessEnv = {}, launcher: readonly string[] = [], bin = BIN): Agent {
  const argv = [...launcher, process.execPath, bin, ...args];
  const proc = spawn(argv[0], argv.slice(1), {
    env: definedOnly({ ...process.env, TELASTIC_STATE_DIR: path.join(os.tmpdir(), 'telastic-test-state', name), ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  return { nodeId: name, proc, output: () => out, exited };
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

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * One line per agent for a failure message: running, or its exit code and its last lines of
 * output, so that a job that never formed says why (an agent that exited says what stopped it).
 */
export function agentsReport(agents: Agent[], lines = 4): string {
  return agents
    .map((a) => {
      const code = a.proc.exitCode ?? a.proc.signalCode;
      const tail = a.output().trimEnd().split('\n').slice(-lines).join(' | ');
      return `${a.nodeId}: ${code === null ? 'running' : `exited ${code}`}: ${tail}`;
    })
    .join('\n');
}

/** Runs `fn`; a failure carries agentsReport(agents) after its own message. */
export async function explained<T>(agents: Agent[], fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Error) err.message += `\nagents:\n${agentsReport(agents)}`;
    throw err;
  }
}

export function stopAll(agents: { proc: ChildProcess; exited: Promise<unknown> }[]): Promise<unknown> {
  for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
  return Promise.all(agents.map((a) => a.exited));
}

/** What `telastic ARGS…` did, run to its end (at most 60 s). */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `telastic ARGS…` to its end: its exit code (-1 when killed) and its output. */
export function runTelastic(args: string[]): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}
