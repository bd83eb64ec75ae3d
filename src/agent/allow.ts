/**
 * What a pool agent agrees to run. In a pool the command comes from whoever submits the job, not
 * from the node's operator, so an agent runs a script only when its real path is an `--allow-file`
 * (or a file given to `--allow`) or lies under an `--allow` directory, always with the agent's own
 * interpreter, and takes a submitted environment variable only when its name matches one of the
 * agent's `--allow-env` patterns and is not one that changes the interpreter or what it loads
 * (env-rules.ts).
 *
 * The agent runs the real path the check resolved, never the path as submitted, and refuses a
 * script that anyone but the agent's user (or root) could swap: every directory from `/` down to
 * it must belong to one of them, and from the allowed root down none may be group/other
 * writable (above the root a sticky one, like /tmp, is fine). So what was checked is what runs.
 * Under an allowed directory, generic launchers (a virtualenv, site-packages) are refused: they
 * run whatever their arguments say; an operator who means one names it with --allow-file.
 */
import { lstat, realpath, stat } from 'node:fs/promises';
import * as path from 'node:path';
import picomatch from 'picomatch';
import type { Launch } from '../job/assignment';
import { ENV_NAME, refusedEnvName } from './env-rules';

export interface LaunchPolicy {
  /** Real absolute paths of `--allow` directories: scripts below them may run. */
  allow: string[];
  /** Real absolute paths of files allowed exactly (`--allow-file`, or a file given to `--allow`). */
  allowFiles: string[];
  /** Glob patterns of environment variable names, e.g. `WANDB_*`. */
  allowEnv: string[];
  /** `--pass-env`: agent-only variables of the agent's own (TEMPORAL_*, …) its workers keep. */
  passEnv: string[];
}

/** What a submission asks an agent to run. */
export type { Launch } from '../job/assignment';
export { NEVER_FROM_SUBMITTER } from './env-rules';

/** What `checkLaunch` decided: why not, or the launch as it runs (its script by its real path). */
export type LaunchCheck = { refused: string } | { refused: null; launch: Launch; passEnv: readonly string[] };

/** `--allow` and `--allow-file` paths, and what else `telastic agent` compiles into a policy. */
export interface PolicyInput {
  /** Directories or files; a file means exactly that file. */
  allow: string[];
  /** Files only, each allowed exactly. @default [] */
  allowFiles?: string[];
  allowEnv: string[];
  /** @default [] */
  passEnv?: string[];
}

/**
 * Resolve `--allow`/`--allow-file` paths (realpath; a missing path is an Error naming it), sort
 * them into directories and exact files, and keep the env patterns and `--pass-env` names.
 */
export async function compilePolicy(input: PolicyInput): Promise<LaunchPolicy> {
  const resolve = async (p: string, flag: string) => {
    try {
      const real = await realpath(path.resolve(p));
      return { real, dir: (await stat(real)).isDirectory() };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file or directory' : `cannot be resolved (${code ?? String(err)})`;
      throw new Error(`${flag} ${p}: ${why}`);
    }
  };
  const dirs: string[] = [];
  const files: string[] = [];
  for (const p of input.allow) {
    const r = await resolve(p, '--allow');
    (r.dir ? dirs : files).push(r.real);
  }
  for (const p of input.allowFiles ?? []) {
    const r = await resolve(p, '--allow-file');
    if (r.dir) throw new Error(`--allow-file ${p}: a directory; give it to --allow, or name the script itself`);
    files.push(r.real);
  }
  for (const pattern of input.allowEnv) {
    if (pattern.trim() === '') throw new Error('--allow-env: empty pattern');
  }
  for (const name of input.passEnv ?? []) {
    if (!ENV_NAME.test(name)) throw new Error(`--pass-env ${name}: not a variable name`);
  }
  return { allow: [...new Set(dirs)], allowFiles: [...new Set(files)], allowEnv: [...input.allowEnv], passEnv: [...new Set(input.passEnv ?? [])] };
}

/** Whether `real` is `allowed` itself or inside it (whole path segments: /a/b2 is not under /a/b). */
function isUnder(real: string, allowed: string): boolean {
  const rel = path.relative(allowed, real);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Directory names whose contents are installed libraries: their scripts are launchers, not entry points. */
const LIBRARY_DIRS = new Set(['site-packages', 'dist-packages']);

/**
 * Why `real` (a script under an allowed directory) is a generic launcher rather than an entry
 * point, or null: inside site-packages/dist-packages or inside a Python environment (a
 * directory holding pyvenv.cfg, or conda-meta/ for conda), e.g. torch's distributed/run.py or
 * the environment's bin/torchrun, which run whatever script their arguments name.
 */
export async function launcherProblem(real: string): Promise<string | null> {
  const lib = real.split(path.sep).find((seg) => LIBRARY_DIRS.has(seg));
  if (lib) return `inside ${lib} (an installed library, whose scripts run whatever their arguments say)`;
  for (let dir = path.dirname(real); ; dir = path.dirname(dir)) {
    for (const marker of ['pyvenv.cfg', 'conda-meta']) {
      if (await exists(path.join(dir, marker))) return `inside the Python environment ${dir} (its programs run whatever their arguments say)`;
    }
    if (path.dirname(dir) === dir) return null;
  }
}

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(() => true, () => false);
}

/**
 * Why someone other than the agent's user or root could swap what `real` runs, or null. `root`
 * is the allowed directory (or, for an exact file, its directory): from it down to the file
 * nothing may be group/other writable; above it a directory may be only when sticky (/tmp),
 * where others cannot rename what they do not own. Every directory on the way must belong to
 * the agent's user or root. `real` has no symlinks left, so lstat sees each component itself.
 */
export async function swappableProblem(real: string, root: string, uid = process.geteuid?.() ?? 0): Promise<string | null> {
  const chain: string[] = [];
  for (let p = real; ; p = path.dirname(p)) {
    chain.push(p);
    if (path.dirname(p) === p) break;
  }
  for (const p of chain) {
    const st = await lstat(p);
    const below = isUnder(p, root);
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    if (st.uid !== uid && st.uid !== 0) return `${p} belongs to uid ${st.uid}, not to this agent's user or root (its owner could swap what runs)`;
    if ((st.mode & 0o022) !== 0 && (below || (st.mode & 0o1000) === 0)) {
      return `${p} is writable by group or others (mode ${mode}), so they could swap what runs; chmod go-w it`;
    }
  }
  return null;
}

/** Why the agent refuses to run `file`, or its real path when it runs it. */
async function checkScript(policy: LaunchPolicy, file: string): Promise<{ refused: string } | { real: string }> {
  if (!path.isAbsolute(file)) return { refused: `${file}: not an absolute path` };
  let real: string;
  try {
    real = await realpath(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { refused: `${file}: no such file on this node` };
    return { refused: `${file}: cannot be resolved on this node (${code ?? String(err)})` };
  }
  const where = real === file ? '' : `resolves to ${real}, `;
  const exact = policy.allowFiles.includes(real);
  const root = exact ? path.dirname(real) : policy.allow.find((a) => isUnder(real, a));
  if (root === undefined) return { refused: `${file}: ${where}not under --allow (${[...policy.allow, ...policy.allowFiles].join(', ')})` };
  if (!exact) {
    const launcher = await launcherProblem(real);
    if (launcher) return { refused: `${file}: ${where}${launcher}; an operator who means it names it with --allow-file` };
  }
  const swappable = await swappableProblem(real, root).catch((err: NodeJS.ErrnoException) => `cannot be checked (${err.code ?? String(err)})`);
  if (swappable) return { refused: `${file}: ${where}${swappable}` };
  return { real };
}

/**
 * Where an absolute path really is (symlinks and `..` resolved by the kernel; for a path that does
 * not exist yet, its nearest existing parent's real path, plus the rest) and whether that lies
 * under an `--allow` path; `problem` when it cannot be resolved. Activities that list or remove
 * files work on `real` only, so that a symlink repointed after this check changes nothing.
 */
export async function resolveUnderAllow(policy: LaunchPolicy, p: string): Promise<{ real: string; allowed: boolean } | { problem: string }> {
  if (!path.isAbsolute(p)) return { problem: 'not an absolute path' };
  let existing = p;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = path.join(await realpath(existing), ...rest);
      return { real, allowed: policy.allow.some((a) => isUnder(real, a)) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || path.dirname(existing) === existing) return { problem: `cannot be resolved on this node (${code ?? String(err)})` };
      rest.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
}

/**
 * Why the agent refuses the job's checkpoint directory, or null when it lies under an `--allow`
 * path: agents list and prune (delete) checkpoints there. It may not exist yet: its nearest
 * existing parent is resolved.
 */
async function refuseDir(policy: LaunchPolicy, dir: string): Promise<string | null> {
  const r = await resolveUnderAllow(policy, dir);
  if ('problem' in r) return `checkpoint dir ${dir}: ${r.problem}`;
  return r.allowed ? null : `checkpoint dir ${dir}: not under --allow (${policy.allow.join(', ')})`;
}

/** Why the agent refuses the submitted variable `name`, or null when it takes it. */
function refuseEnv(policy: LaunchPolicy, name: string): string | null {
  if (!ENV_NAME.test(name)) return `env ${JSON.stringify(name)}: not a variable name`;
  const never = refusedEnvName(name);
  if (never !== null) return `env ${name}: never taken from a submission, whatever --allow-env says (${never}); set it in the agent's own environment`;
  if (policy.allowEnv.length > 0 && picomatch.isMatch(name, policy.allowEnv, { dot: true })) return null;
  const allowed = policy.allowEnv.length > 0 ? policy.allowEnv.join(',') : 'none';
  return `env ${name}: not in --allow-env (${allowed}); start the agent with --allow-env ${name} to take it`;
}

/**
 * Whether the agent runs this launch, and what it runs: the launch with its script replaced by
 * the real path that was checked (so that a symlink repointed after the check changes nothing,
 * and Python's sys.path[0] is the real directory). Refused: one line naming the agent and what
 * it refuses, e.g. `agent n3 refuses /tmp/x/evil.py: not under --allow (/opt/train, /srv/jobs)`.
 */
export async function checkLaunch(policy: LaunchPolicy, launch: Launch, nodeId: string): Promise<LaunchCheck> {
  const refuses = `agent ${nodeId} refuses`;
  const { script, module } = launch.entrypoint;
  if (policy.allow.length === 0 && policy.allowFiles.length === 0) return { refused: `${refuses} every submitted script: it was started without --allow` };
  if (module) return { refused: `${refuses} -m ${script}: a module name cannot be checked against --allow paths; submit the script's path` };
  // With --no-python the script is the program itself; either way the same path rule applies.
  const checked = await checkScript(policy, script);
  if ('refused' in checked) return { refused: `${refuses} ${checked.refused}` };
  const dirProblem = launch.checkpointDir === undefined ? null : await refuseDir(policy, launch.checkpointDir);
  if (dirProblem) return { refused: `${refuses} ${dirProblem}` };
  for (const name of Object.keys(launch.env)) {
    const envProblem = refuseEnv(policy, name);
    if (envProblem) return { refused: `${refuses} ${envProblem}` };
  }
  return { refused: null, launch: { ...launch, entrypoint: { ...launch.entrypoint, script: checked.real } }, passEnv: policy.passEnv };
}
