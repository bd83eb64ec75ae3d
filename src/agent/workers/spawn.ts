/**
 * Starting one worker so that it never outlives its agent: it leads its own process group
 * (`detached: true`, so the group can be signalled as a whole, grandchildren included), and on
 * Linux it runs under util-linux's `setpriv --pdeathsig KILL`, which asks the kernel to SIGKILL it
 * when the agent dies, even by SIGKILL. The death signal survives exec, and setpriv execs the
 * command in place, so the pid, exit code and signal are the worker's own. Grandchildren do not
 * inherit it: the reaper (reaper.ts) kills their groups.
 * The kernel sends the death signal when the *thread* that forked the worker exits: spawn from
 * the main thread (activities run there), never from a worker_thread.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'child_process';
import { accessSync, constants } from 'fs';
import { delimiter, join } from 'path';

let setprivPath: string | null | undefined;

/** The path of `setpriv`, or null where there is none (then workers are spawned without it). */
export function findSetpriv(): string | null {
  if (setprivPath !== undefined) return setprivPath;
  setprivPath = null;
  if (process.platform === 'linux') {
    const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/bin', '/usr/sbin', '/sbin'];
    for (const dir of dirs.filter((d) => d !== '')) {
      try {
        accessSync(join(dir, 'setpriv'), constants.X_OK);
        setprivPath = join(dir, 'setpriv');
        break;
      } catch {
        // not here
      }
    }
  }
  return setprivPath;
}

export interface SpawnWorkerOptions {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  stdio: SpawnOptions['stdio'];
}

/** Spawns the worker as the leader of a new process group (its pgid is its pid). */
export function spawnWorker(o: SpawnWorkerOptions): ChildProcess {
  const setpriv = findSetpriv();
  const [file, args] = setpriv === null ? [o.file, o.args] : [setpriv, ['--pdeathsig', 'KILL', '--', o.file, ...o.args]];
  return spawn(file, args, { cwd: o.cwd, env: o.env, stdio: o.stdio, detached: true });
}
