/** What a pool agent agrees to run, against real files, directories and symlinks. */
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkLaunch, compilePolicy, NEVER_FROM_SUBMITTER, type Launch, type LaunchPolicy } from '../../src/agent/allow';

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
const policy = (allowEnv: string[] = []): Promise<LaunchPolicy> => compilePolicy([train], allowEnv);

describe('compilePolicy', () => {
  it('resolves --allow paths to real paths and keeps the patterns', async () => {
    await symlink(train, path.join(root, 'train-link'));
    const p = await compilePolicy([path.join(root, 'train-link'), `${train}/sub/..`, single], ['WANDB_*']);
    expect(p).toEqual({ allow: [train, single], allowEnv: ['WANDB_*'] });
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
    expect(await checkLaunch(await policy(), launch(path.join(train, 'sub', 'ok.py')), 'n3')).toBeNull();
  });

  it('runs an --allow file itself, and a symlink outside that resolves inside', async () => {
    const p = await compilePolicy([train, single], []);
    expect(await checkLaunch(p, launch(single), 'n3')).toBeNull();
    expect(await checkLaunch(p, launch(path.join(outside, 'inward.py')), 'n3')).toBeNull();
  });

  it('refuses every launch when started without --allow', async () => {
    const p = await compilePolicy([], ['*']);
    expect(await checkLaunch(p, launch(path.join(train, 'sub', 'ok.py')), 'n3')).toBe(
      'agent n3 refuses every submitted script: it was started without --allow',
    );
  });

  it('refuses a script outside, naming the --allow paths', async () => {
    const p = await compilePolicy([train, single], []);
    const evil = path.join(outside, 'evil.py');
    expect(await checkLaunch(p, launch(evil), 'n3')).toBe(`agent n3 refuses ${evil}: not under --allow (${train}, ${single})`);
  });

  it('refuses a symlink inside the --allow directory that points outside', async () => {
    const link = path.join(train, 'escape.py');
    expect(await checkLaunch(await policy(), launch(link), 'n3')).toBe(
      `agent n3 refuses ${link}: resolves to ${path.join(outside, 'evil.py')}, not under --allow (${train})`,
    );
    const viaDir = path.join(train, 'outlink', 'evil.py');
    expect(await checkLaunch(await policy(), launch(viaDir), 'n3')).toMatch(/^agent n3 refuses .*outlink\/evil\.py: resolves to .*outside\/evil\.py, not under --allow/);
  });

  it('refuses a .. that climbs out', async () => {
    const climb = `${train}/sub/../../outside/evil.py`;
    expect(await checkLaunch(await policy(), launch(climb), 'n3')).toMatch(/^agent n3 refuses .*: resolves to .*outside\/evil\.py, not under --allow/);
  });

  it('does not take a sibling with the same prefix for a subdirectory', async () => {
    const near = path.join(root, 'train2', 'near.py');
    expect(await checkLaunch(await policy(), launch(near), 'n3')).toBe(`agent n3 refuses ${near}: not under --allow (${train})`);
  });

  it('refuses a relative path and a missing file', async () => {
    expect(await checkLaunch(await policy(), launch('train/sub/ok.py'), 'n3')).toBe('agent n3 refuses train/sub/ok.py: not an absolute path');
    const missing = path.join(train, 'gone.py');
    expect(await checkLaunch(await policy(), launch(missing), 'n3')).toBe(`agent n3 refuses ${missing}: no such file on this node`);
  });

  it('refuses python -m: a module name is not a path', async () => {
    expect(await checkLaunch(await policy(), launch('pkg.train', {}, { module: true }), 'n3')).toBe(
      'agent n3 refuses -m pkg.train: a module name cannot be checked against --allow paths; submit the script\'s path',
    );
  });

  it('holds a --no-python program to the same path rule', async () => {
    const p = await policy();
    expect(await checkLaunch(p, launch(path.join(train, 'sub', 'ok.py'), {}, { noPython: true }), 'n3')).toBeNull();
    expect(await checkLaunch(p, launch('/bin/sh', {}, { noPython: true }), 'n3')).toMatch(/^agent n3 refuses \/bin\/sh: .*not under --allow/);
  });
});

describe('checkLaunch: the checkpoint directory (agents list and prune it)', () => {
  const withDir = (dir: string): Launch => ({ ...launch(path.join(train, 'sub', 'ok.py')), checkpointDir: dir });

  it('takes a directory under --allow, also one that does not exist yet', async () => {
    expect(await checkLaunch(await policy(), withDir(path.join(train, 'ckpt', 'run-1')), 'n3')).toBeNull();
  });

  it('refuses one outside, also through a symlink inside or a not-yet-existing path under it', async () => {
    const p = await policy();
    expect(await checkLaunch(p, withDir(outside), 'n3')).toBe(`agent n3 refuses checkpoint dir ${outside}: not under --allow (${train})`);
    expect(await checkLaunch(p, withDir(path.join(train, 'outlink', 'new')), 'n3')).toMatch(/refuses checkpoint dir .*outlink\/new: not under --allow/);
    expect(await checkLaunch(p, withDir('ckpt'), 'n3')).toBe('agent n3 refuses checkpoint dir ckpt: not an absolute path');
  });
});

describe('checkLaunch: the environment', () => {
  const ok = () => path.join(train, 'sub', 'ok.py');

  it('takes names matching an --allow-env pattern', async () => {
    const p = await policy(['WANDB_*', 'SEED']);
    expect(await checkLaunch(p, launch(ok(), { WANDB_PROJECT: 'x', WANDB_MODE: 'offline', SEED: '1' }), 'n3')).toBeNull();
  });

  it('refuses a name no pattern matches, and says how to allow it', async () => {
    const p = await policy(['WANDB_*']);
    expect(await checkLaunch(p, launch(ok(), { WANDB_MODE: 'x', HF_TOKEN: 't' }), 'n3')).toBe(
      'agent n3 refuses env HF_TOKEN: not in --allow-env (WANDB_*); start the agent with --allow-env HF_TOKEN to take it',
    );
    expect(await checkLaunch(await policy(), launch(ok(), { SEED: '1' }), 'n3')).toBe(
      'agent n3 refuses env SEED: not in --allow-env (none); start the agent with --allow-env SEED to take it',
    );
  });

  it('matches whole names, case-sensitively', async () => {
    const p = await policy(['WANDB_*']);
    expect(await checkLaunch(p, launch(ok(), { MY_WANDB_X: '1' }), 'n3')).toMatch(/refuses env MY_WANDB_X/);
    expect(await checkLaunch(p, launch(ok(), { wandb_x: '1' }), 'n3')).toMatch(/refuses env wandb_x/);
  });

  it.each([...NEVER_FROM_SUBMITTER])('never takes %s, even with --allow-env *', async (name) => {
    const p = await policy(['*', name]);
    expect(await checkLaunch(p, launch(ok(), { [name]: '/tmp/x' }), 'n3')).toBe(
      `agent n3 refuses env ${name}: never taken from a submission (it changes the interpreter or what it loads); set it in the agent's own environment`,
    );
  });

  it('lists at least the interpreter and loader variables', () => {
    for (const name of ['PYTHON_EXEC', 'PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'NODE_OPTIONS']) {
      expect(NEVER_FROM_SUBMITTER).toContain(name);
    }
  });

  it('refuses a name that is not a variable name', async () => {
    const p = await policy(['*']);
    expect(await checkLaunch(p, launch(ok(), { 'BASH_FUNC_x%%': '() { :; }' }), 'n3')).toBe('agent n3 refuses env "BASH_FUNC_x%%": not a variable name');
  });
});
