/**
 * torchrun agents for bench/vs-torchrun.ts, and the process-tree helpers both launchers share.
 *
 * A node's processes are not one process group under either launcher: torchrun starts every
 * worker in a new session (torch/distributed/elastic/multiprocessing/subprocess_handler:
 * `start_new_session=True`) and telastic spawns every worker detached (its own group). So a
 * "node" here is its agent process and all of that agent's descendants.
 */
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT, type Agent } from './agents';

export const VENV = path.join(ROOT, '.venv', 'bin');

/** `torchrun ARGS` in its own process group (detached), output captured (LOGLEVEL=INFO: rendezvous results). */
export function startTorchrun(nodeId: string, args: string[]): Agent {
  const env = { ...process.env, LOGLEVEL: 'INFO' };
  const proc = spawn(path.join(VENV, 'torchrun'), args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  return { nodeId, proc, output: () => out, exited };
}

/** `pid` and all its descendants, parents before children. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const line of execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' }).trim().split('\n')) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    children.set(pp, [...(children.get(pp) ?? []), p]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** Send `sig` to each pid; ones already gone are skipped. */
export function signalAll(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      /* gone */
    }
  }
}

/** Resume and SIGKILL an agent and its whole tree (workers, telastic's reaper), then wait for it. */
export async function killNode(a: Agent, extra: number[] = []): Promise<void> {
  const pids = [...(a.proc.pid ? processTree(a.proc.pid) : []), ...extra];
  signalAll(pids, 'SIGCONT');
  signalAll(pids, 'SIGKILL');
  await Promise.race([a.exited, new Promise((r) => setTimeout(r, 10_000))]);
}

export interface Line { step: number; world: number; t: number }

/** The `step world_size unix_time` lines rank 0 of examples/train.py appended to `file`. */
export function progressLines(file: string): Line[] {
  let text = '';
  try {
    text = require('node:fs').readFileSync(file, 'utf8') as string;
  } catch {
    return [];
  }
  return text.split('\n').filter((l) => /^\d+ \d+ [\d.]+$/.test(l)).map((l) => {
    const [step, world, t] = l.split(' ').map(Number);
    return { step, world, t };
  });
}

export function versions(): { torch: string; temporal: string } {
  const run = (file: string, args: string[]) => {
    try {
      return execFileSync(file, args, { encoding: 'utf8' }).trim();
    } catch (err) {
      return `unknown (${String(err).split('\n')[0]})`;
    }
  };
  return { torch: run(path.join(VENV, 'python'), ['-c', 'import torch; print(torch.__version__)']), temporal: run(path.join(VENV, 'temporal'), ['--version']) };
}
