/** Spawns a TypeScript fixture as a real child process and reads its output line by line. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const REGISTER = path.join(__dirname, 'fixtures', 'ts-register.js');

export interface Child {
  proc: ChildProcessWithoutNullStreams;
  stdout: string[];
  stderr: string[];
  /** Resolves with the first stdout line matching `re` (also one printed already). */
  line(re: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `fixture`: a file in ./fixtures, or an absolute path (another folder's fixture). */
export function spawnFixture(fixture: string, args: string[] = [], cwd = ROOT): Child {
  const proc = spawn(process.execPath, ['-r', REGISTER, path.resolve(__dirname, 'fixtures', fixture), ...args], { cwd });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const waiters: Array<() => void> = [];
  const collect = (into: string[]) => {
    let partial = '';
    return (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      into.push(...lines);
      waiters.forEach((w) => w());
    };
  };
  proc.stdout.on('data', collect(stdout));
  proc.stderr.on('data', collect(stderr));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const line = (re: RegExp, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line ${re} in ${timeoutMs} ms; stderr: ${stderr.join('\n')}`)), timeoutMs);
      const check = () => {
        const found = stdout.find((l) => re.test(l));
        if (found !== undefined) {
          clearTimeout(timer);
          resolve(found);
        }
      };
      waiters.push(check);
      check();
      void exited.then(() => setTimeout(() => reject(new Error(`exited before ${re}; stderr: ${stderr.join('\n')}`)), 50));
    });
  return { proc, stdout, stderr, line, exited };
}

/** True while `pid` exists and is not a zombie (a container's pid 1 may never reap it). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Waits until `pid` is gone; false if it still exists after `timeoutMs`. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** Pids of the direct children of `pid` (Linux /proc). */
export function childPids(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text === '' ? [] : text.split(/\s+/).map(Number);
}
