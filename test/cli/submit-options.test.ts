/** `telastic submit` argv: the submit-only flags, then telastic run's parser for the rest. */
import * as path from 'node:path';
import { HelpRequested, UsageError } from '../../src/cli/errors';
import type { RunSystemInfo } from '../../src/cli/run-options';
import { parseSubmitArgs, SUBMIT_USAGE, type SubmitOptions } from '../../src/cli/submit-options';

const sys: RunSystemInfo = { cpuCount: 8, hostname: 'host-a', pid: 42, randomId: () => '0a1b2c3d-4e5f-6789-abcd-ef0123456789' };
const submit = (argv: string[], env: NodeJS.ProcessEnv = {}): SubmitOptions => parseSubmitArgs(argv, env, sys);

/** The error `argv` (and `env`) produce; fails the test if parsing succeeds. */
function thrown(argv: string[], env: NodeJS.ProcessEnv = {}): Error {
  try {
    submit(argv, env);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`expected an error for ${argv.join(' ')}`);
}
const usageError = (argv: string[], env: NodeJS.ProcessEnv = {}): UsageError => {
  const err = thrown(argv, env);
  if (!(err instanceof UsageError)) throw err;
  return err;
};

describe('defaults', () => {
  it('fills the spec from `telastic submit --pool p train.py`', () => {
    expect(submit(['--pool', 'p', 'train.py'])).toEqual({
      spec: {
        jobId: 'job-0a1b2c3d',
        pool: 'p',
        env: {},
        minNodes: 1,
        maxNodes: 1,
        nprocPerNode: 1,
        maxRestarts: 0,
        role: 'default',
        entrypoint: { script: path.resolve('train.py'), args: [], module: false, noPython: false },
        rdzv: { joinTimeoutMs: 600_000, lastCallTimeoutMs: 30_000, heartbeatTimeoutMs: 10_000, prepareTimeoutMs: 5_000, groupSize: 64 },
        shutdownTimeoutMs: 30_000,
      },
      wait: false,
      connection: { address: 'localhost:7233', namespace: 'default' },
      taskQueue: 'telastic',
      notes: [],
    });
  });
});

describe('the words before SCRIPT', () => {
  it('reads submit and job flags with values, in any order and spelling', () => {
    const o = submit([
      '--nnodes', '2:4', '--pool=gpus', '--env', 'WANDB_MODE=offline', '--nproc_per_node=3', '--wait',
      '--rdzv-id', 'my-job', '--env=URL=http://x/?a=b', '-n', 'ns', '--max-restarts', '2', '--checkpoint-dir', 'ckpt',
      '--keep-checkpoints', '3', '--rdzv-conf', 'join_timeout=60', '--task-queue', 'tq', '/opt/train/t.py',
    ]);
    expect(o.spec).toMatchObject({
      jobId: 'my-job',
      pool: 'gpus',
      env: { WANDB_MODE: 'offline', URL: 'http://x/?a=b' },
      minNodes: 2,
      maxNodes: 4,
      nprocPerNode: 3,
      maxRestarts: 2,
      checkpointDir: path.resolve('ckpt'),
      keepCheckpoints: 3,
      entrypoint: { script: '/opt/train/t.py', args: [] },
    });
    expect(o.spec.rdzv.joinTimeoutMs).toBe(60_000);
    expect([o.wait, o.connection.namespace, o.taskQueue]).toEqual([true, 'ns', 'tq']);
  });

  it('leaves the script its arguments, even ones that look like flags', () => {
    const o = submit(['--pool', 'p', 't.py', '--pool', 'q', '--env', 'A=1', '--wait', '--local-addr', 'x', '-h']);
    expect(o.spec.pool).toBe('p');
    expect(o.spec.env).toEqual({});
    expect(o.wait).toBe(false);
    expect(o.spec.entrypoint.args).toEqual(['--pool', 'q', '--env', 'A=1', '--wait', '--local-addr', 'x', '-h']);
  });

  it('takes a flag\'s value even when it looks like a submit flag', () => {
    const o = submit(['--role', '--wait', '--pool', 'p', 't.py']);
    expect([o.spec.role, o.wait]).toEqual(['--wait', false]);
  });

  it('stops at --', () => {
    const o = submit(['--pool', 'p', '--', '--wait', 'x']);
    expect(o.spec.entrypoint).toMatchObject({ script: path.resolve('--wait'), args: ['x'] });
  });

  it('keeps a module name as given with -m, and makes a --no-python program absolute', () => {
    expect(submit(['--pool', 'p', '-m', 'pkg.train', 'a']).spec.entrypoint).toEqual({ script: 'pkg.train', args: ['a'], module: true, noPython: false });
    expect(submit(['--pool', 'p', '--no-python', 'bin/x']).spec.entrypoint.script).toBe(path.resolve('bin/x'));
  });

  it('reads PET_* variables as telastic run does', () => {
    const o = submit(['--pool', 'p', 't.py'], { PET_NNODES: '2:3', PET_RDZV_ID: 'pet-job', PET_MAX_RESTARTS: '4' });
    expect(o.spec).toMatchObject({ minNodes: 2, maxNodes: 3, jobId: 'pet-job', maxRestarts: 4 });
    expect(submit(['--pool', 'p', '--nnodes', '5', 't.py'], { PET_NNODES: '2:3' }).spec.minNodes).toBe(5);
  });
});

describe('a node\'s flags are refused', () => {
  it.each([
    [['--local-addr', '10.0.0.1'], '--local-addr: a node\'s flag; give it to telastic agent'],
    [['--local_addr=10.0.0.1'], '--local_addr: a node\'s flag; give it to telastic agent'],
    [['--node-id', 'n1'], '--node-id: a node\'s flag; give it to telastic agent'],
    [['--log-dir', '/tmp/l'], '--log-dir: a node\'s flag; give it to telastic agent'],
    [['-r', '3'], '-r: a node\'s flag; give it to telastic agent'],
    [['-r3'], '-r: a node\'s flag; give it to telastic agent'],
    [['--redirects=3'], '--redirects: a node\'s flag; give it to telastic agent'],
    [['-t', '1'], '-t: a node\'s flag; give it to telastic agent'],
    [['--tee', '1'], '--tee: a node\'s flag; give it to telastic agent'],
    [['--local-ranks-filter', '0'], '--local-ranks-filter: a node\'s flag; give it to telastic agent'],
    [['-mr', '3'], '-r: a node\'s flag; give it to telastic agent'],
    [['--no-coordinator'], '--no-coordinator: a node\'s flag; telastic agent hosts no job workflows unless given --coordinator'],
    [['--standalone'], '--standalone: not for a pool: it starts a one-machine job with its own server; use telastic run --standalone'],
  ])('%j', (flags, message) => {
    const err = usageError(['--pool', 'p', ...flags, 't.py']);
    expect(err.message).toBe(message);
    expect(err.message).not.toContain('\n');
  });

  it('ignores, with a note, the PET_* variables of a node\'s flags', () => {
    const o = submit(['--pool', 'p', 't.py'], { PET_STANDALONE: '1', PET_LOG_DIR: '/tmp/l', PET_RDZV_ID: 'j' });
    expect(o.spec.jobId).toBe('j');
    expect(o.notes).toEqual([
      'PET_STANDALONE ignored: a node\'s setting; give telastic agent the flag',
      'PET_LOG_DIR ignored: a node\'s setting; give telastic agent the flag',
    ]);
  });

  it('refuses cpu/auto for --nproc-per-node: the agents\' CPUs are not counted here', () => {
    expect(usageError(['--pool', 'p', '--nproc-per-node', 'auto', 't.py']).message).toBe(
      '--nproc-per-node auto: would count this machine\'s CPUs, not the agents\'; give a number',
    );
    expect(usageError(['--pool', 'p', 't.py'], { PET_NPROC_PER_NODE: 'cpu' }).field).toBe('PET_NPROC_PER_NODE');
  });

  it('notes --monitor-interval as ignored', () => {
    expect(submit(['--pool', 'p', '--monitor-interval', '1', 't.py']).notes).toEqual(['--monitor-interval 1 ignored: each agent watches its own workers']);
  });
});

describe('bad input is one line naming the flag', () => {
  it.each([
    [['t.py'], '--pool', 'missing --pool NAME: the pool whose agents run the job'],
    [['--pool'], '--pool', '--pool: expected a value'],
    [['--pool', 'bad pool', 't.py'], '--pool', '--pool "bad pool": letters, digits and . _ : @ - only'],
    [['--pool='], '--pool', '--pool "": must not be empty'],
    [['--pool', 'p', '--env', 'NOEQUALS', 't.py'], '--env', '--env NOEQUALS: expected NAME=VALUE'],
    [['--pool', 'p', '--env', '1X=2', 't.py'], '--env', '--env 1X=2: NAME must be letters, digits and _, not starting with a digit'],
    [['--pool', 'p', '--env=A-B=2', 't.py'], '--env', '--env A-B=2: NAME must be letters, digits and _, not starting with a digit'],
    [['--pool', 'p', '--env'], '--env', '--env: expected a value'],
    [['--pool', 'p', '--wait=1', 't.py'], '--wait', '--wait=1: --wait takes no value'],
    [['--pool', 'p', '--nnodes', '3:2', 't.py'], '--nnodes', '--nnodes 3:2: minimum (3) exceeds maximum (2)'],
    [['--pool', 'p', '--bogus', 't.py'], '--bogus', 'unknown option --bogus'],
  ])('%j', (argv, field, message) => {
    const err = usageError(argv);
    expect([err.field, err.message]).toEqual([field, message]);
  });

  it('asks for SCRIPT', () => {
    expect(usageError(['--pool', 'p']).field).toBe('SCRIPT');
  });
});

describe('help', () => {
  it.each([['-h'], ['--help']])('%s before SCRIPT shows the submit usage', (flag) => {
    const err = thrown(['--pool', 'p', flag, 't.py']);
    expect(err).toBeInstanceOf(HelpRequested);
    expect((err as HelpRequested).text).toBe(SUBMIT_USAGE);
    expect(SUBMIT_USAGE).toMatch(/^Usage: telastic submit --pool NAME/);
  });
});
