/**
 * Processes of a round that even SIGKILL did not end: asleep in the kernel (state D: a hung
 * driver or filesystem, a frozen cgroup). The agent cannot end them and must not start a round
 * beside them; the node reports them in one line and the job takes it out (docs/decisions.md).
 */
import { isAlive } from './process-group';

export interface StuckProcesses {
  /** Pids still alive `afterKillMs` after SIGKILL, with their /proc state letter. */
  processes: { pid: number; state: string }[];
  afterKillMs: number;
  /** Their process groups, still tracked by the reaper: untrack them once the processes are gone. */
  pgids: number[];
}

/** `workers 1234, 1235 did not exit 30 s after SIGKILL (state D)`; the node prefixes its name. */
export function describeStuck(s: StuckProcesses): string {
  const pids = s.processes.map((p) => p.pid);
  const states = [...new Set(s.processes.map((p) => p.state))];
  const secs = Math.round(s.afterKillMs / 100) / 10;
  return `${pids.length === 1 ? 'worker' : 'workers'} ${pids.join(', ')} did not exit ${secs} s after SIGKILL (${states.length === 1 ? 'state' : 'states'} ${states.join(', ')})`;
}

/** The same processes, less those that have ended since; null when none is left. */
export function stillStuck(s: StuckProcesses | null): StuckProcesses | null {
  const processes = s?.processes.filter((p) => isAlive(p.pid)) ?? [];
  return s && processes.length > 0 ? { ...s, processes } : null;
}
