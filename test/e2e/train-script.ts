/**
 * Runs of test/fixtures/watchdog_train.py (real torch) for the hung-rank tests (watchdog.test.ts,
 * progress.test.ts): its paths, its step plan, the events its ranks write, and cleanup of every
 * process and directory a test file's runs left (torchrun's workers outlive a killed torchrun).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT, tmpDir } from './harness';

export const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
export const TORCHRUN = path.join(ROOT, '.venv', 'bin', 'torchrun');
export const SCRIPT = path.join(ROOT, 'test', 'fixtures', 'watchdog_train.py');
export const STEPS = 30;
export const HANG_AT = 12;
export const CKPT_EVERY = 5;

export interface Ev { ev: string; rank: number; attempt: number; pid: number; t: number; step?: number; world?: number; path?: string }

/** Seconds between two event times, to 0.01. */
export const secs = (from: number, to: number) => Math.round((to - from) * 100) / 100;

/** A test file's runs; call at its top level (it registers the afterAll cleanup). */
export function trainRuns() {
  const dirs: string[] = [];
  const pids: number[] = [];
  afterAll(() => {
    for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  /** The events written so far; every pid seen is killed at the end of the file. */
  const events = (file: string): Ev[] => {
    if (!existsSync(file)) return [];
    const evs = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Ev);
    for (const e of evs) if (!pids.includes(e.pid)) pids.push(e.pid);
    return evs;
  };
  /** A run's directory and the script's argv: the common plan, then `extra`. */
  const job = (name: string, extra: string[]) => {
    const dir = tmpDir(name);
    dirs.push(dir);
    const ev = path.join(dir, 'events.jsonl');
    const ckpt = path.join(dir, 'ckpt');
    const args = [SCRIPT, '--steps', String(STEPS), '--ckpt-every', String(CKPT_EVERY), '--events', ev, '--ckpt-dir', ckpt, ...extra];
    return { dir, ev, ckpt, args };
  };
  return { events, job, pids };
}
