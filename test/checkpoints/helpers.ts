/** Real files in temporary directories for the checkpoint tests. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const venvPython = path.join(__dirname, '../../.venv/bin/python');

export interface Fixtures {
  dir: string;
  /** Whether model.pt and dcp/ were written by real torch (else model.pt is a plain zip, no dcp/). */
  torch: boolean;
}

/**
 * Run make_checkpoints.py into a new temporary directory (with the project's venv when it has
 * torch, else python3). Synchronous, so test names can say which kind they got.
 */
export function makeFixtures(dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-ckpt-fx-'))): Fixtures {
  const script = path.join(__dirname, 'fixtures/make_checkpoints.py');
  const pythons = existsSync(venvPython) ? [venvPython, 'python3'] : ['python3'];
  for (const py of pythons) {
    const r = spawnSync(py, [script, dir], { encoding: 'utf8', timeout: 120_000 });
    if (r.status === 0) return { dir, torch: JSON.parse(r.stdout.trim().split('\n').pop()!).torch };
  }
  throw new Error(`could not write fixtures with ${pythons.join(' or ')}`);
}

export async function tempDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'telastic-ckpt-'));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Set the mtime of a file, or of a directory and everything in it, to `secondsAgo` before now. */
export async function age(p: string, secondsAgo: number): Promise<void> {
  const t = new Date(Date.now() - secondsAgo * 1000);
  if ((await stat(p)).isDirectory()) {
    for (const name of await readdir(p)) await age(path.join(p, name), secondsAgo);
  }
  await utimes(p, t, t);
}

/** Copy a file or directory into place (as if renamed there when done), optionally aged. */
export async function place(src: string, dest: string, secondsAgo?: number): Promise<string> {
  await mkdir(path.dirname(dest), { recursive: true });
  await cp(src, dest, { recursive: true });
  if (secondsAgo !== undefined) await age(dest, secondsAgo);
  return dest;
}

/** A copy of `src` cut to half its size (a full disk, an interrupted copy). */
export async function placeTruncated(src: string, dest: string): Promise<string> {
  await place(src, dest);
  const size = (await readFile(dest)).length;
  await truncate(dest, Math.floor(size / 2));
  return dest;
}

/** A manifest directory: files with contents, then manifest.json listing them (or `manifest` verbatim). */
export async function manifestDir(
  dir: string,
  files: Record<string, string>,
  manifest?: string | object,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  const listed = manifest ?? { files: Object.entries(files).map(([p, c]) => ({ path: p, size: Buffer.byteLength(c) })) };
  await writeFile(path.join(dir, 'manifest.json'), typeof listed === 'string' ? listed : JSON.stringify(listed));
  return dir;
}
