/**
 * What a process costs, read from Linux's /proc: resident memory, CPU time, open file
 * descriptors, and the whole machine's CPU. For the scale benchmarks' "which resource stopped
 * it" question; every reader returns null once the process is gone.
 */
import { readFileSync, readdirSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux the project runs on

/** VmRSS of a process, in KiB. */
export function rssKb(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** User + system CPU time a process has used so far, in seconds. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime, stime (fields 14, 15)
  } catch {
    return null;
  }
}

export function fdCount(pid: number): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/** The machine's busy and total CPU time so far (all cores), in seconds. */
export function machineCpu(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = cpu[3] + (cpu[4] ?? 0); // idle + iowait
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

export function memAvailableMb(): number {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/**
 * CPU used by each of some processes and by the whole machine over a window, as a share of one
 * core (100 % = one core busy) and of the machine (100 % = every core busy).
 */
export function cpuWindow(pids: Record<string, number[]>): () => { perGroup: Record<string, number>; machine: number } {
  const t0 = Date.now();
  const m0 = machineCpu();
  const sum = (ps: number[]) => ps.reduce((a, p) => a + (cpuSeconds(p) ?? 0), 0);
  const c0 = Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, sum(ps)]));
  return () => {
    const secs = (Date.now() - t0) / 1000;
    const m1 = machineCpu();
    const perGroup = Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, Math.round(((sum(ps) - c0[k]) / secs) * 100)]));
    return { perGroup, machine: Math.round(((m1.busy - m0.busy) / (m1.total - m0.total)) * 100) };
  };
}
