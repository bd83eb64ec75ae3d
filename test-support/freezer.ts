/**
 * A cgroup v1 freezer for tests of processes the agent cannot end: a task in a FROZEN cgroup
 * sleeps in the kernel (state D) and SIGKILL does not end it until the cgroup is thawed.
 * Needs root and /sys/fs/cgroup/freezer (cgroup v1), as on the test machines.
 * `remove()` thaws, SIGKILLs every task in it, waits for them to go and removes the cgroup;
 * call it in a `finally` (or afterEach) so a failed test leaves nothing frozen behind.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const FREEZER_ROOT = '/sys/fs/cgroup/freezer';

let seq = 0;

export interface Freezer {
  dir: string;
  /** Move `pid` into the cgroup and freeze it; resolves once the cgroup reads FROZEN. */
  freeze(pid: number): Promise<void>;
  tasks(): number[];
  remove(): Promise<void>;
}

export function createFreezer(name: string): Freezer {
  const dir = path.join(FREEZER_ROOT, `telastic-test-${name}-${process.pid}-${seq++}`);
  mkdirSync(dir);
  const tasks = () => (existsSync(dir) ? readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number) : []);
  const until = async (what: string, ok: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !ok(); await new Promise((r) => setTimeout(r, 20))) if (Date.now() > end) throw new Error(`freezer ${dir}: ${what} not within ${ms} ms`);
  };
  return {
    dir,
    tasks,
    async freeze(pid) {
      writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
      writeFileSync(path.join(dir, 'freezer.state'), 'FROZEN');
      await until('FROZEN', () => readFileSync(path.join(dir, 'freezer.state'), 'utf8').trim() === 'FROZEN', 10_000);
    },
    async remove() {
      if (!existsSync(dir)) return;
      writeFileSync(path.join(dir, 'freezer.state'), 'THAWED');
      for (const pid of tasks()) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      await until('empty', () => tasks().length === 0, 10_000);
      rmdirSync(dir);
    },
  };
}
