/** `telastic agent` argv: defaults, every flag, and one-line errors naming the flag. */
import * as path from 'node:path';
import { parseAgentArgs, type AgentCliOptions } from '../../src/cli/agent-options';
import { HelpRequested, UsageError } from '../../src/cli/errors';
import type { RunSystemInfo } from '../../src/cli/run-options';

const sys: RunSystemInfo = { cpuCount: 8, hostname: 'host-a', pid: 42, randomId: () => 'uuid-1' };
const agent = (argv: string[], env: NodeJS.ProcessEnv = {}): AgentCliOptions => parseAgentArgs(argv, env, sys);

/** The error `argv` produces; fails the test if parsing succeeds. */
function thrown(argv: string[], env: NodeJS.ProcessEnv = {}): Error {
  try {
    agent(argv, env);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`expected an error for ${argv.join(' ')}`);
}

describe('defaults', () => {
  it('fills every field from `telastic agent --pool p`', () => {
    expect(agent(['--pool', 'p'])).toEqual({
      pool: 'p',
      nodeId: 'host-a-42',
      nproc: 8,
      labels: {},
      allow: [],
      allowFiles: [],
      allowEnv: [],
      passEnv: [],
      warnings: [],
      coordinator: false,
      taskQueue: 'telastic',
      shutdownTimeoutMs: 30_000,
      heartbeatTimeoutMs: 10_000,
      checkpointSignal: 'SIGUSR1',
      metrics: null,
      connection: { address: 'localhost:7233', namespace: 'default' },
    });
  });

  it('reads the connection from TEMPORAL_* variables', () => {
    expect(agent(['--pool', 'p'], { TEMPORAL_ADDRESS: 't.example:7300', TEMPORAL_NAMESPACE: 'ns' }).connection).toEqual({
      address: 't.example:7300',
      namespace: 'ns',
    });
  });
});

describe('flags', () => {
  it('reads every flag', () => {
    const o = agent([
      '--pool=gpus', '--node-id', 'n3', '--local-addr', '10.0.0.3', '--nproc', '4', '--labels', 'zone=eu-1,rack=r/7',
      '--allow', '/opt/train', '--allow-env', 'WANDB_*,SEED', '--coordinator', '--task-queue', 'tq',
      '--shutdown-timeout', '2.5', '--heartbeat-timeout', '20', '--checkpoint-signal', 'usr2', '--address', 'tmp:7233', '-n', 'ns',
      '--metrics-port', '9464', '--metrics-host', '127.0.0.1',
    ]);
    expect(o).toEqual({
      pool: 'gpus',
      nodeId: 'n3',
      localAddr: '10.0.0.3',
      nproc: 4,
      labels: { zone: 'eu-1', rack: 'r/7' },
      allow: ['/opt/train'],
      allowFiles: [],
      allowEnv: ['WANDB_*', 'SEED'],
      passEnv: [],
      warnings: [],
      coordinator: true,
      taskQueue: 'tq',
      shutdownTimeoutMs: 2500,
      heartbeatTimeoutMs: 20_000,
      checkpointSignal: 'SIGUSR2',
      connection: { address: 'tmp:7233', namespace: 'ns' },
      metrics: { port: 9464, host: '127.0.0.1', intervalMs: 5000, maxJobs: 200 },
    });
  });

  it('takes cpu and auto for --nproc', () => {
    expect(agent(['--pool', 'p', '--nproc', 'cpu']).nproc).toBe(8);
    expect(agent(['--pool', 'p', '--nproc', 'auto']).nproc).toBe(8);
  });

  it('takes several --allow paths after one flag and across repeats, made absolute', () => {
    const o = agent(['--allow', '/opt/a', 'rel/b', '--pool', 'p', '--allow', '/srv/c', '--allow=/opt/a']);
    expect(o.allow).toEqual(['/opt/a', path.resolve('rel/b'), '/srv/c']);
  });

  it('merges repeated --allow-env lists', () => {
    expect(agent(['--pool', 'p', '--allow-env', 'A,B_*', '--allow-env=C?', '--allow-env', 'A']).allowEnv).toEqual(['A', 'B_*', 'C?']);
  });

  it('takes exact files with --allow-file, made absolute, and exact names with --pass-env', () => {
    const o = agent(['--pool', 'p', '--allow-file', '/opt/a/train.py', 'rel/run.py', '--pass-env', 'TEMPORAL_NAMESPACE,PGPASSWORD', '--pass-env=TEMPORAL_NAMESPACE']);
    expect(o).toMatchObject({ allowFiles: ['/opt/a/train.py', path.resolve('rel/run.py')], passEnv: ['TEMPORAL_NAMESPACE', 'PGPASSWORD'] });
  });

  it('warns, in one line, when the API key is on the command line; not when it comes from TEMPORAL_API_KEY', () => {
    expect(agent(['--pool', 'p', '--api-key', 'k']).warnings).toEqual([
      'warning: --api-key on the command line can be read by every local user (ps, /proc/PID/cmdline); set TEMPORAL_API_KEY or use --api-key-file instead',
    ]);
    expect(agent(['--pool', 'p'], { TEMPORAL_API_KEY: 'k' })).toMatchObject({ warnings: [], connection: { apiKey: 'k' } });
  });

  it('takes an empty --labels as none', () => {
    expect(agent(['--pool', 'p', '--labels', '']).labels).toEqual({});
  });
});

describe('bad input is one line naming the flag', () => {
  it.each([
    [[], '--pool', 'missing --pool NAME: the pool this agent serves'],
    [['--pool'], '--pool', '--pool: expected a value'],
    [['--pool', 'bad pool'], '--pool', '--pool "bad pool": letters, digits and . _ : @ - only'],
    [['--pool', 'p', '--node-id', '-x'], '--node-id', '--node-id -x: letters, digits and . _ : @ - only'],
    [['--pool', 'p', '--nproc', '0'], '--nproc', '--nproc 0: must be at least 1'],
    [['--pool', 'p', '--nproc', 'gpu'], '--nproc', '--nproc gpu: telastic runs CPU workers only; use a number, cpu or auto'],
    [['--pool', 'p', '--labels', 'zone'], '--labels', '--labels zone: "zone" is not key=value (letters, digits and . _ - / only)'],
    [['--pool', 'p', '--labels', 'a=1,b=x y'], '--labels', '--labels "a=1,b=x y": "b=x y" is not key=value (letters, digits and . _ - / only)'],
    [['--pool', 'p', '--labels', 'a=1,a=2'], '--labels', '--labels a=1,a=2: label a given twice'],
    [['--pool', 'p', '--allow-env', 'A,,B'], '--allow-env', '--allow-env A,,B: "" is not a pattern of variable names (letters, digits, _ and * ? [ ])'],
    [['--pool', 'p', '--allow-env', 'A=1'], '--allow-env', '--allow-env A=1: "A=1" is not a pattern of variable names (letters, digits, _ and * ? [ ])'],
    [['--pool', 'p', '--allow', ''], '--allow', '--allow "": must not be empty'],
    [['--pool', 'p', '--allow'], '--allow', '--allow: expected a value'],
    [['--pool', 'p', '--allow-file', ''], '--allow-file', '--allow-file "": must not be empty'],
    [['--pool', 'p', '--pass-env', 'TEMPORAL_*'], '--pass-env', '--pass-env TEMPORAL_*: "TEMPORAL_*" is not a variable name (exact names only: letters, digits and _)'],
    [['--pool', 'p', '--shutdown-timeout', '-1'], '--shutdown-timeout', '--shutdown-timeout -1: must be a number >= 0'],
    [['--pool', 'p', '--heartbeat-timeout', '0'], '--heartbeat-timeout', '--heartbeat-timeout 0: must be a positive number'],
    [['--pool', 'p', '--checkpoint-signal', 'SIGKILL'], '--checkpoint-signal', '--checkpoint-signal SIGKILL: expected a signal a process can catch, such as SIGUSR1 or SIGUSR2'],
    [['--pool', 'p', '--task-queue', ''], '--task-queue', '--task-queue "": must not be empty'],
    [['--pool', 'p', '--coordinator=yes'], '--coordinator', '--coordinator=yes: --coordinator takes no value'],
    [['--pool', 'p', '--bogus'], '--bogus', 'unknown option --bogus'],
    [['--pool', 'p', 'train.py'], 'train.py', 'unexpected argument train.py: telastic agent takes no script (jobs come from telastic submit)'],
  ])('%j', (argv, field, message) => {
    const err = thrown(argv);
    expect(err).toBeInstanceOf(UsageError);
    expect([(err as UsageError).field, err.message]).toEqual([field, message]);
  });
});

describe('help', () => {
  it.each([['-h'], ['--help']])('%s shows the agent usage', (flag) => {
    const err = thrown(['--pool', 'p', flag]);
    expect(err).toBeInstanceOf(HelpRequested);
    expect((err as HelpRequested).text).toMatch(/^Usage: telastic agent --pool NAME \[options\]/);
    expect((err as HelpRequested).text).toContain('--allow-env');
  });
});

describe('--health-check', () => {
  it('is the operator\'s: the flag, else TELASTIC_HEALTH_CHECK, with its timeout', () => {
    expect(agent(['--pool', 'p']).healthCheck).toBeUndefined();
    expect(agent(['--pool', 'p', '--health-check', '/opt/hc.sh', '--health-check-timeout', '10']).healthCheck).toEqual({ command: '/opt/hc.sh', timeoutMs: 10_000 });
    expect(agent(['--pool', 'p'], { TELASTIC_HEALTH_CHECK: 'nvidia-smi' }).healthCheck).toEqual({ command: 'nvidia-smi', timeoutMs: 30_000 });
    expect(thrown(['--pool', 'p', '--health-check', 'x', '--health-check-timeout', '-1']).message).toMatch(/^--health-check-timeout -1: /);
  });
});
