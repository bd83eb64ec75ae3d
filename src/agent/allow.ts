/**
 * What a pool agent agrees to run. In a pool the command comes from whoever submits the job, not
 * from the node's operator, so an agent runs a script only when its real path lies under one of
 * the agent's `--allow` paths, always with the agent's own interpreter, and takes a submitted
 * environment variable only when its name matches one of the agent's `--allow-env` patterns and
 * is not one that changes the interpreter or what it loads (NEVER_FROM_SUBMITTER).
 *
 * The check resolves symlinks and `..` when it runs; the agent should start the program it was
 * shown, straight after, so that a path swapped in between is not what runs.
 */
import { realpath } from 'node:fs/promises';
import * as path from 'node:path';
import picomatch from 'picomatch';
import type { Launch } from '../job/assignment';

export interface LaunchPolicy {
  /** Real absolute paths, directories or files, as `compilePolicy` resolved them. */
  allow: string[];
  /** Glob patterns of environment variable names, e.g. `WANDB_*`. */
  allowEnv: string[];
}

/** What a submission asks an agent to run. */
export type { Launch } from '../job/assignment';

/**
 * Env names never taken from a submission, whatever `--allow-env` says: each picks the
 * interpreter, or makes it, the dynamic loader or a shell load code from elsewhere.
 */
export const NEVER_FROM_SUBMITTER: readonly string[] = [
  'PYTHON_EXEC', 'PATH', 'HOME',
  'LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'GCONV_PATH', 'OPENSSL_CONF',
  'PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'PYTHONUSERBASE', 'PYTHONPLATLIBDIR',
  'PYTHONINSPECT', 'PYTHONBREAKPOINT', 'PYTHONWARNINGS', 'PYTHONEXECUTABLE',
  'NODE_OPTIONS', 'BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS', 'PS4',
];

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Resolve `--allow` paths (realpath; a missing path is an Error naming it) and keep the env patterns. */
export async function compilePolicy(allow: string[], allowEnv: string[]): Promise<LaunchPolicy> {
  const real = await Promise.all(
    allow.map(async (p) => {
      try {
        return await realpath(path.resolve(p));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const why = code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file or directory' : `cannot be resolved (${code ?? String(err)})`;
        throw new Error(`--allow ${p}: ${why}`);
      }
    }),
  );
  for (const pattern of allowEnv) {
    if (pattern.trim() === '') throw new Error('--allow-env: empty pattern');
  }
  return { allow: [...new Set(real)], allowEnv: [...allowEnv] };
}

/** Whether `real` is `allowed` itself or inside it (whole path segments: /a/b2 is not under /a/b). */
function isUnder(real: string, allowed: string): boolean {
  const rel = path.relative(allowed, real);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Why the agent refuses to run `file`, or null when it lies under an `--allow` path. */
async function refusePath(policy: LaunchPolicy, file: string): Promise<string | null> {
  if (!path.isAbsolute(file)) return `${file}: not an absolute path`;
  let real: string;
  try {
    real = await realpath(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `${file}: no such file on this node`;
    return `${file}: cannot be resolved on this node (${code ?? String(err)})`;
  }
  if (policy.allow.some((a) => isUnder(real, a))) return null;
  const where = real === file ? '' : `resolves to ${real}, `;
  return `${file}: ${where}not under --allow (${policy.allow.join(', ')})`;
}

/**
 * Why the agent refuses the job's checkpoint directory, or null when it lies under an `--allow`
 * path: agents list and prune (delete) checkpoints there. It may not exist yet: its nearest
 * existing parent is resolved.
 */
async function refuseDir(policy: LaunchPolicy, dir: string): Promise<string | null> {
  if (!path.isAbsolute(dir)) return `checkpoint dir ${dir}: not an absolute path`;
  let existing = path.resolve(dir);
  const rest: string[] = [];
  for (;;) {
    try {
      const real = path.join(await realpath(existing), ...rest);
      if (policy.allow.some((a) => isUnder(real, a))) return null;
      return `checkpoint dir ${dir}: not under --allow (${policy.allow.join(', ')})`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || path.dirname(existing) === existing) return `checkpoint dir ${dir}: cannot be resolved on this node (${code ?? String(err)})`;
      rest.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
}

/** Why the agent refuses the submitted variable `name`, or null when it takes it. */
function refuseEnv(policy: LaunchPolicy, name: string): string | null {
  if (!ENV_NAME.test(name)) return `env ${JSON.stringify(name)}: not a variable name`;
  if (NEVER_FROM_SUBMITTER.includes(name)) {
    return `env ${name}: never taken from a submission (it changes the interpreter or what it loads); set it in the agent's own environment`;
  }
  if (policy.allowEnv.length > 0 && picomatch.isMatch(name, policy.allowEnv, { dot: true })) return null;
  const allowed = policy.allowEnv.length > 0 ? policy.allowEnv.join(',') : 'none';
  return `env ${name}: not in --allow-env (${allowed}); start the agent with --allow-env ${name} to take it`;
}

/**
 * null when the agent runs this launch; else one line naming the agent and what it refuses, e.g.
 * `agent n3 refuses /tmp/x/evil.py: not under --allow (/opt/train, /srv/jobs)`.
 */
export async function checkLaunch(policy: LaunchPolicy, launch: Launch, nodeId: string): Promise<string | null> {
  const refuses = `agent ${nodeId} refuses`;
  const { script, module } = launch.entrypoint;
  if (policy.allow.length === 0) return `${refuses} every submitted script: it was started without --allow`;
  if (module) return `${refuses} -m ${script}: a module name cannot be checked against --allow paths; submit the script's path`;
  // With --no-python the script is the program itself; either way the same path rule applies.
  const scriptProblem = await refusePath(policy, script);
  if (scriptProblem) return `${refuses} ${scriptProblem}`;
  const dirProblem = launch.checkpointDir === undefined ? null : await refuseDir(policy, launch.checkpointDir);
  if (dirProblem) return `${refuses} ${dirProblem}`;
  for (const name of Object.keys(launch.env)) {
    const envProblem = refuseEnv(policy, name);
    if (envProblem) return `${refuses} ${envProblem}`;
  }
  return null;
}
