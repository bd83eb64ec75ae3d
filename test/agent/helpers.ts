/** Test helpers for real processes: liveness from /proc (a zombie counts as dead), polling, temp dirs. */
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { PassThrough } from 'stream';
import type { WorkerSpec } from '../../src/agent/workers';

/** Whether `pid` is a running process (not a zombie), read independently of the code under test. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Polls `probe` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitFor<T>(probe: () => T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The contents of `path` once it exists and ends with a newline. */
export function readWhenWritten(path: string): Promise<string> {
  return waitFor(() => {
    try {
      const text = readFileSync(path, 'utf8');
      return text.endsWith('\n') ? text.trim() : undefined;
    } catch {
      return undefined;
    }
  }, path);
}

const dirs: string[] = [];
export function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'telastic-agent-'));
  dirs.push(d);
  return d;
}
export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A worker running `sh -c script`, with global rank = 10 + local rank. */
export function shWorker(localRank: number, script: string, env: Record<string, string> = {}): WorkerSpec {
  return {
    localRank,
    rank: 10 + localRank,
    file: 'sh',
    args: ['-c', script],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RANK: String(10 + localRank), LOCAL_RANK: String(localRank), ...env },
  };
}

/** Console streams whose text can be read back. */
export function captureConsole() {
  const text = { stdout: '', stderr: '' };
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stdout.on('data', (c: Buffer) => (text.stdout += c.toString()));
  stderr.on('data', (c: Buffer) => (text.stderr += c.toString()));
  return { console: { stdout, stderr }, text };
}
