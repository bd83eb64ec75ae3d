/** What a pool agent agrees to run, against real files, directories and symlinks. */
import { chmod, chown, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkLaunch, compilePolicy as compile, NEVER_FROM_SUBMITTER, type Launch, type LaunchPolicy } from '../../src/agent/allow';
import { NEVER_FROM_SUBMITTER_PREFIXES, refusedEnvName } from '../../src/agent/env-rules';

let root: string;
let train: string; // an --allow directory
let single: string; // an --allow file
let outside: string; // a directory not under --allow

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'telastic-allow-')));
  train = path.join(root, 'train');
  outside = path.join(root, 'outside');
  await mkdir(path.join(train, 'sub'), { recursive: true });
  await mkdir(outside);
  await mkdir(path.join(root, 'train2'));
  await writeFile(path.join(train, 'sub', 'ok.py'), 'print(1)\n');
  await writeFile(path.join(root, 'train2', 'near.py'), 'print(1)\n');
  await writeFile(path.join(outside, 'evil.py'), 'print(1)\n');
  single = path.join(outside, 'one.py');
  await writeFile(single, 'print(1)\n');
  await symlink(path.join(outside, 'evil.py'), path.join(train, 'escape.py'));
  await symlink(outside, path.join(train, 'outlink'));
  await symlink(path.join(train, 'sub', 'ok.py'), path.join(outside, 'inward.py'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

const launch = (script: string, env: Record<string, string> = {}, more: Partial<Launch['entrypoint']> = {}): Launch => ({
  entrypoint: { script, args: ['--lr', '0.1'], module: false, noPython: false, ...more },
  env,
});
const compilePolicy = (allow: string[], allowEnv: string[], more: { allowFiles?: string[]; passEnv?: string[] } = {}) => compile({ allow, allowEnv, ...more });
const policy = (allowEnv: string[] = []): Promise<LaunchPolicy> => compilePolicy([train], allowEnv);
/** Why checkLaunch refuses, or null when it runs the launch. */
const why = async (p: LaunchPolicy, l: Launch, node: string): Promise<string | null> => (await checkLaunch(p, l, node)).refused;

describe('compilePolicy', () => {
  it('resolves --allow paths to real paths and keeps the patterns', async () => {
    await symlink(train, path.join(root, 'train-link'));
    const p = await compilePolicy([path.join(root, 'train-link'), `${train}/sub/..`, single], ['WANDB_*']);
    expect(p).toEqual({ allow: [train], allowFiles: [single], allowEnv: ['WANDB_*'], passEnv: [] });
  });

  it('names a missing --allow path', async () => {
    await expect(compilePolicy([path.join(root, 'nope')], [])).rejects.toThrow(`--allow ${path.join(root, 'nope')}: no such file or directory`);
  });

  it('refuses an empty --allow-env pattern', async () => {
    await expect(compilePolicy([train], [''])).rejects.toThrow('--allow-env: empty pattern');
  });
});

describe('checkLaunch: the script', () => {
  it('runs a script inside an --allow directory', async () => {
    expect(await why(await policy(), launch(path.join(train, 'sub', 'ok.py')), 'n3')).toBeNull();
  });

  it('runs an --allow file itself, and a symlink outside that resolves inside', async () => {
    const p = await compilePolicy([train, single], []);
    expect(await why(p, launch(single), 'n3')).toBeNull();
    expect(await why(p, launch(path.join(outside, 'inward.py')), 'n3')).toBeNull();
  });

  it('refuses every launch when started without --allow', async () => {
    const p = await compilePolicy([], ['*']);
    expect(await why(p, launch(path.join(train, 'sub', 'ok.py')), 'n3')).toBe(
      'agent n3 refuses every submitted script: it was started without --allow',
    );
  });

  it('refuses a script outside, naming the --allow paths', async () => {
    const p = await compilePolicy([train, single], []);
    const evil = path.join(outside, 'evil.py');
    expect(await why(p, launch(evil), 'n3')).toBe(`agent n3 refuses ${evil}: not under --allow (${train}, ${single})`);
  });

  it('refuses a symlink inside the --allow directory that points outside', async () => {
    const link = path.join(train, 'escape.py');
    expect(await why(await policy(), launch(link), 'n3')).toBe(
      `agent n3 refuses ${link}: resolves to ${path.join(outside, 'evil.py')}, not under --allow (${train})`,
    );
    const viaDir = path.join(train, 'outlink', 'evil.py');
    expect(await why(await policy(), launch(viaDir), 'n3')).toMatch(/^agent n3 refuses .*outlink\/evil\.py: resolves to .*outside\/evil\.py, not under --allow/);
  });

  it('refuses a .. that climbs out', async () => {
    const climb = `${train}/sub/../../outside/evil.py`;
    expect(await why(await policy(), launch(climb), 'n3')).toMatch(/^agent n3 refuses .*: resolves to .*outside\/evil\.py, not under --allow/);
  });

  it('does not take a sibling with the same prefix for a subdirectory', async () => {
    const near = path.join(root, 'train2', 'near.py');
    expect(await why(await policy(), launch(near), 'n3')).toBe(`agent n3 refuses ${near}: not under --allow (${train})`);
  });

  it('refuses a relative path and a missing file', async () => {
    expect(await why(await policy(), launch('train/sub/ok.py'), 'n3')).toBe('agent n3 refuses train/sub/ok.py: not an absolute path');
    const missing = path.join(train, 'gone.py');
    expect(await why(await policy(), launch(missing), 'n3')).toBe(`agent n3 refuses ${missing}: no such file on this node`);
  });

  it('refuses python -m: a module name is not a path', async () => {
    expect(await why(await policy(), launch('pkg.train', {}, { module: true }), 'n3')).toBe(
      'agent n3 refuses -m pkg.train: a module name cannot be checked against --allow paths; submit the script\'s path',
    );
  });

  it('holds a --no-python program to the same path rule', async () => {
    const p = await policy();
    expect(await why(p, launch(path.join(train, 'sub', 'ok.py'), {}, { noPython: true }), 'n3')).toBeNull();
    expect(await why(p, launch('/bin/sh', {}, { noPython: true }), 'n3')).toMatch(/^agent n3 refuses \/bin\/sh: .*not under --allow/);
  });
});

describe('checkLaunch: the checkpoint directory (agents list and prune it)', () => {
  const withDir = (dir: string): Launch => ({ ...launch(path.join(train, 'sub', 'ok.py')), checkpointDir: dir });

  it('takes a directory under --allow, also one that does not exist yet', async () => {
    expect(await why(await policy(), withDir(path.join(train, 'ckpt', 'run-1')), 'n3')).toBeNull();
  });

  it('refuses one outside, also through a symlink inside or a not-yet-existing path under it', async () => {
    const p = await policy();
    expect(await why(p, withDir(outside), 'n3')).toBe(`agent n3 refuses checkpoint dir ${outside}: not under --allow (${train})`);
    expect(await why(p, withDir(path.join(train, 'outlink', 'new')), 'n3')).toMatch(/refuses checkpoint dir .*outlink\/new: not under --allow/);
    expect(await why(p, withDir('ckpt'), 'n3')).toBe('agent n3 refuses checkpoint dir ckpt: not an absolute path');
  });
});

describe('checkLaunch: the environment', () => {
  const ok = () => path.join(train, 'sub', 'ok.py');

  it('takes names matching an --allow-env pattern', async () => {
    const p = await policy(['WANDB_*', 'SEED']);
    expect(await why(p, launch(ok(), { WANDB_PROJECT: 'x', WANDB_MODE: 'offline', SEED: '1' }), 'n3')).toBeNull();
  });

  it('refuses a name no pattern matches, and says how to allow it', async () => {
    const p = await policy(['WANDB_*']);
    expect(await why(p, launch(ok(), { WANDB_MODE: 'x', HF_TOKEN: 't' }), 'n3')).toBe(
      'agent n3 refuses env HF_TOKEN: not in --allow-env (WANDB_*); start the agent with --allow-env HF_TOKEN to take it',
    );
    expect(await why(await policy(), launch(ok(), { SEED: '1' }), 'n3')).toBe(
      'agent n3 refuses env SEED: not in --allow-env (none); start the agent with --allow-env SEED to take it',
    );
  });

  it('matches whole names, case-sensitively', async () => {
    const p = await policy(['WANDB_*']);
    expect(await why(p, launch(ok(), { MY_WANDB_X: '1' }), 'n3')).toMatch(/refuses env MY_WANDB_X/);
    expect(await why(p, launch(ok(), { wandb_x: '1' }), 'n3')).toMatch(/refuses env wandb_x/);
  });

  it.each([...NEVER_FROM_SUBMITTER])('never takes %s, even with --allow-env *', async (name) => {
    const p = await policy(['*', name]);
    expect(await why(p, launch(ok(), { [name]: '/tmp/x' }), 'n3')).toBe(
      `agent n3 refuses env ${name}: never taken from a submission, whatever --allow-env says (${refusedEnvName(name)}); set it in the agent's own environment`,
    );
  });

  it('lists at least the interpreter and loader variables', () => {
    for (const name of ['PYTHON_EXEC', 'PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'NODE_OPTIONS']) {
      expect({ name, refused: refusedEnvName(name) !== null }).toEqual({ name, refused: true });
    }
  });

  it('refuses a name that is not a variable name', async () => {
    const p = await policy(['*']);
    expect(await why(p, launch(ok(), { 'BASH_FUNC_x%%': '() { :; }' }), 'n3')).toBe('agent n3 refuses env "BASH_FUNC_x%%": not a variable name');
  });
});

describe('checkLaunch: what runs is what was checked', () => {
  it('gives the launch with the script by its real path (a symlink repointed later changes nothing)', async () => {
    const r = await checkLaunch(await policy(), launch(path.join(outside, 'inward.py'), { }), 'n3');
    expect(r).toEqual({ refused: null, launch: launch(path.join(train, 'sub', 'ok.py')), passEnv: [] });
  });

  it('passes the --pass-env names along', async () => {
    const r = await checkLaunch(await compilePolicy([train], [], { passEnv: ['TEMPORAL_X'] }), launch(path.join(train, 'sub', 'ok.py')), 'n3');
    expect(r).toMatchObject({ refused: null, passEnv: ['TEMPORAL_X'] });
  });
});

describe('checkLaunch: a script others could swap', () => {
  let tree: string;
  beforeEach(async () => {
    tree = path.join(root, `perm-${Math.random().toString(36).slice(2)}`);
    await mkdir(path.join(tree, 'allowed', 'sub'), { recursive: true, mode: 0o755 });
    await writeFile(path.join(tree, 'allowed', 'sub', 'run.py'), 'print(1)\n', { mode: 0o644 });
  });
  const script = () => path.join(tree, 'allowed', 'sub', 'run.py');
  const check = async () => why(await compilePolicy([path.join(tree, 'allowed')], []), launch(script()), 'n3');

  it('runs one that only its owner can change', async () => {
    expect(await check()).toBeNull();
  });

  it('refuses one under a group- or world-writable directory from the allowed root down, sticky or not', async () => {
    await chmod(path.join(tree, 'allowed', 'sub'), 0o775);
    expect(await check()).toBe(`agent n3 refuses ${script()}: ${path.join(tree, 'allowed', 'sub')} is writable by group or others (mode 0775), so they could swap what runs; chmod go-w it`);
    await chmod(path.join(tree, 'allowed', 'sub'), 0o755);
    await chmod(path.join(tree, 'allowed'), 0o1777);
    expect(await check()).toMatch(/allowed is writable by group or others \(mode 1777\)/);
  });

  it('refuses a group-writable script', async () => {
    await chmod(script(), 0o664);
    expect(await check()).toMatch(/run\.py is writable by group or others \(mode 0664\)/);
  });

  it('above the allowed root, refuses a world-writable directory unless it is sticky (like /tmp)', async () => {
    await chmod(tree, 0o777);
    expect(await check()).toMatch(new RegExp(`${tree} is writable by group or others \\(mode 0777\\)`));
    await chmod(tree, 0o1777);
    expect(await check()).toBeNull();
  });

  (process.geteuid?.() === 0 ? it : it.skip)('refuses one in a directory another user owns (root only: chown)', async () => {
    await chown(path.join(tree, 'allowed', 'sub'), 12345, 0);
    expect(await check()).toBe(`agent n3 refuses ${script()}: ${path.join(tree, 'allowed', 'sub')} belongs to uid 12345, not to this agent's user or root (its owner could swap what runs)`);
  });

  it('holds an exact --allow-file to the same rule, from its own directory', async () => {
    await chmod(path.join(tree, 'allowed', 'sub'), 0o777);
    const p = await compilePolicy([], [], { allowFiles: [script()] });
    expect(await why(p, launch(script()), 'n3')).toMatch(/sub is writable by group or others \(mode 0777\)/);
  });
});

describe('checkLaunch: generic launchers under an allowed directory', () => {
  let proj: string;
  beforeAll(async () => {
    proj = path.join(root, 'proj');
    const files = [
      '.venv/pyvenv.cfg', '.venv/bin/torchrun', '.venv/lib/python3.11/site-packages/torch/distributed/run.py',
      'conda/conda-meta/history', 'conda/bin/torchrun', 'vendor/dist-packages/x/run.py', 'train.py',
    ];
    for (const f of files) {
      await mkdir(path.dirname(path.join(proj, f)), { recursive: true });
      await writeFile(path.join(proj, f), 'print(1)\n');
    }
  });

  it.each([
    ['.venv/lib/python3.11/site-packages/torch/distributed/run.py', 'inside site-packages (an installed library, whose scripts run whatever their arguments say)'],
    ['vendor/dist-packages/x/run.py', 'inside dist-packages (an installed library, whose scripts run whatever their arguments say)'],
    ['.venv/bin/torchrun', 'inside the Python environment <proj>/.venv (its programs run whatever their arguments say)'],
    ['conda/bin/torchrun', 'inside the Python environment <proj>/conda (its programs run whatever their arguments say)'],
  ])('refuses %s unless named exactly', async (rel, reason) => {
    const file = path.join(proj, rel);
    expect(await why(await compilePolicy([proj], []), launch(file), 'n3')).toBe(
      `agent n3 refuses ${file}: ${reason.replace('<proj>', proj)}; an operator who means it names it with --allow-file`,
    );
    expect(await why(await compilePolicy([proj], [], { allowFiles: [file] }), launch(file), 'n3')).toBeNull();
    expect(await why(await compilePolicy([proj, file], []), launch(file), 'n3')).toBeNull(); // a file given to --allow is exact too
  });

  it('still runs an entry point of the project itself', async () => {
    expect(await why(await compilePolicy([proj], []), launch(path.join(proj, 'train.py')), 'n3')).toBeNull();
  });

  it('refuses --allow-file of a directory, and a file given to --allow allows only itself', async () => {
    await expect(compile({ allow: [], allowFiles: [proj], allowEnv: [] })).rejects.toThrow(`--allow-file ${proj}: a directory; give it to --allow, or name the script itself`);
    const p = await compilePolicy([path.join(proj, 'train.py')], []);
    expect(await why(p, launch(path.join(proj, 'vendor', 'dist-packages', 'x', 'run.py')), 'n3')).toMatch(/not under --allow/);
  });
});

describe('the environment rule: names that load code are never taken, whatever --allow-env says', () => {
  it.each([
    ['PYTHONPYCACHEPREFIX', 'PYTHON*'], ['PYTHONSAFEPATH', '*'], ['LD_DEBUG_OUTPUT', 'LD_*'], ['DYLD_INSERT_LIBRARIES', '*'],
    ['TELASTIC_CHECKPOINT_DIR', 'TELASTIC_*'], ['TORCHELASTIC_ERROR_FILE', '*'], ['WANDB__EXECUTABLE', 'WANDB_*'],
    ['NCCL_NET_PLUGIN', 'NCCL_*'], ['NCCL_TUNER_PLUGIN', 'NCCL_*'], ['NCCL_PROFILER_PLUGIN', 'NCCL_*'], ['TORCH_EXTENSIONS_DIR', 'TORCH*'],
    ['TRITON_CACHE_DIR', 'TRITON_*'], ['TORCHINDUCTOR_CACHE_DIR', '*'], ['PYTORCH_KERNEL_CACHE_PATH', '*'], ['HF_MODULES_CACHE', 'HF_*'],
    ['GIT_SSH_COMMAND', '*'], ['PYENV_ROOT', '*'],
  ])('refuses %s (with --allow-env %s)', async (name, pattern) => {
    expect(await why(await policy([pattern]), launch(path.join(train, 'sub', 'ok.py'), { [name]: '/tmp/x' }), 'n3')).toMatch(
      new RegExp(`^agent n3 refuses env ${name}: never taken from a submission, whatever --allow-env says \\(.+\\); set it in the agent's own environment$`),
    );
  });

  it('names why, per family', () => {
    expect(refusedEnvName('PYTHONPYCACHEPREFIX')).toMatch(/^Python reads PYTHON\* variables/);
    expect(refusedEnvName('NCCL_NET_PLUGIN')).toMatch(/^NCCL loads a plugin library/);
    expect(refusedEnvName('WANDB__EXECUTABLE')).toMatch(/WANDB__EXECUTABLE is the program it starts/);
    expect(NEVER_FROM_SUBMITTER_PREFIXES).toEqual(expect.arrayContaining(['PYTHON', 'LD_', 'DYLD_', 'TELASTIC_', 'TORCHELASTIC_']));
  });

  it('still takes the ordinary names the same globs match', async () => {
    const p = await policy(['WANDB_*', 'NCCL_*', 'HF_*']);
    expect(await why(p, launch(path.join(train, 'sub', 'ok.py'), { WANDB_PROJECT: 'x', WANDB_MODE: 'offline', NCCL_DEBUG: 'INFO', HF_TOKEN: 't' }), 'n3')).toBeNull();
    for (const name of ['WANDB_PROJECT', 'NCCL_DEBUG', 'SEED', 'OMP_NUM_THREADS', 'CUDA_VISIBLE_DEVICES']) expect(refusedEnvName(name)).toBeNull();
  });
});
