/**
 * Process groups: every worker leads its own (spawned detached), so one signal reaches the worker
 * and everything it forked. Liveness reads /proc where there is one, because a zombie is dead for
 * our purposes and an orphaned grandchild may never be reaped (PID 1 in a container often is
 * not an init that reaps).
 */
import { readdirSync, readFileSync } from 'fs';

const HAVE_PROC = process.platform === 'linux';

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, pgrp, …]. */
function statFields(pid: number | string): string[] | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

const dead = (state: string | undefined) => state === undefined || state === 'Z' || state === 'X';

/** Whether `pid` is a live (not zombie) process. */
export function isAlive(pid: number): boolean {
  if (HAVE_PROC) {
    const f = statFields(pid);
    return f !== null && !dead(f[0]);
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The kernel's start time of `pid` (clock ticks since boot), to tell a reused pid apart; null if unknown. */
export function startTime(pid: number): string | null {
  if (!HAVE_PROC) return null;
  return statFields(pid)?.[19] ?? null;
}

/** Which of `pgids` still have a live member. */
export function liveGroups(pgids: Iterable<number>): Set<number> {
  const wanted = new Set(pgids);
  const live = new Set<number>();
  if (wanted.size === 0) return live;
  if (!HAVE_PROC) {
    for (const g of wanted) if (signalGroup(g, 0)) live.add(g);
    return live;
  }
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (f === null || dead(f[0])) continue;
    const pgrp = Number(f[2]);
    if (wanted.has(pgrp)) live.add(pgrp);
  }
  return live;
}

/** The live processes of `pgids` and their /proc state letter (`D`: in the kernel, `R`, `S`…), by pid. */
export function liveMembers(pgids: Iterable<number>): { pid: number; state: string }[] {
  const wanted = new Set(pgids);
  if (wanted.size === 0) return [];
  if (!HAVE_PROC) return [...liveGroups(wanted)].map((pid) => ({ pid, state: '?' }));
  const out: { pid: number; state: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (f !== null && !dead(f[0]) && wanted.has(Number(f[2]))) out.push({ pid: Number(name), state: f[0]! });
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/** Sends `signal` to process group `pgid`; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (!(pgid > 1)) return false; // never -0 (our own group) or -1 (every process)
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `signal` (SIGTERM, or the signal the agent received: --signals-to-handle) and SIGCONT, so a
 * stopped process can act on it, to each group with a live member, SIGKILL to those still alive
 * after `graceMs`. Resolves when none is alive, or with the groups
 * that even SIGKILL did not end within `killWaitMs` (a process stuck in the kernel).
 */
export async function terminateGroups(
  pgids: number[],
  graceMs: number,
  pollMs: number,
  killWaitMs = 5_000,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<number[]> {
  let rest = [...liveGroups(pgids)];
  for (const g of rest) {
    signalGroup(g, signal);
    signalGroup(g, 'SIGCONT');
  }
  const until = async (deadline: number) => {
    while (rest.length > 0 && Date.now() < deadline) {
      await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
      rest = [...liveGroups(rest)];
    }
  };
  await until(Date.now() + graceMs);
  for (const g of rest) signalGroup(g, 'SIGKILL');
  await until(Date.now() + killWaitMs);
  return rest;
}
