import * as os from 'node:os';
import { HelpRequested, UsageError } from '../../src/cli/errors';
import { parseRunArgs, type RunOptions, type RunSystemInfo } from '../../src/cli/run-options';

const sys: RunSystemInfo = { cpuCount: 8, hostname: 'host-a', pid: 42, randomId: () => 'uuid-1' };
const run = (argv: string[], env: NodeJS.ProcessEnv = {}): RunOptions => parseRunArgs(argv, env, sys);

/** The UsageError `argv` (and `env`) produce; fails the test if parsing succeeds. */
function usageError(argv: string[], env: NodeJS.ProcessEnv = {}): UsageError {
  try {
    run(argv, env);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error(`expected a UsageError for ${argv.join(' ')}`);
}

describe('defaults are torchrun\'s', () => {
  it('fills every field from `telastic run train.py`', () => {
    expect(run(['train.py'])).toEqual({
      minNodes: 1,
      maxNodes: 1,
      nprocPerNode: 1,
      rdzvId: 'none',
      address: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'telastic',
      rdzv: { joinTimeoutMs: 600_000, lastCallTimeoutMs: 30_000, heartbeatTimeoutMs: 10_000, prepareTimeoutMs: 5_000, groupSize: 64 },
      standalone: false,
      metrics: null,
      maxRestarts: 0,
      monitorIntervalMs: 100,
      role: 'default',
      entrypoint: { script: 'train.py', args: [], module: false, noPython: false },
      redirects: '0',
      tee: '0',
      duplicateStdoutFilters: [],
      duplicateStderrFilters: [],
      signalsToHandle: ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'],
      virtualLocalRank: false,
      eventLogHandler: 'null',
      shutdownTimeoutMs: 30_000,
      nodeId: 'host-a-42',
      coordinator: true,
      checkpointSignal: 'SIGUSR1',
      leaveGraceMs: 25_000,
      connection: { address: 'localhost:7233', namespace: 'default' },
      notes: [],
    });
  });

  it('leaves the optional fields out', () => {
    const o = run(['train.py']);
    for (const k of ['logDir', 'localRanksFilter', 'localAddr', 'checkpointDir', 'keepCheckpoints', 'numaBinding'] as const) {
      expect(o[k]).toBeUndefined();
    }
    expect(o.connection.tls).toBeUndefined();
  });

  it('uses the real host for the default node id and CPU count', () => {
    const o = parseRunArgs(['--nproc-per-node', 'auto', 't.py'], {});
    expect(o.nprocPerNode).toBe(os.cpus().length);
    expect(o.nodeId).toBe(`${os.hostname().replace(/[^A-Za-z0-9._:@-]/g, '-')}-${process.pid}`);
  });
});

describe('spellings: dashed, underscored and --flag=value', () => {
  const cases: Array<[name: string, value: string, pick: (o: RunOptions) => unknown, expected: unknown]> = [
    ['nnodes', '2:4', (o) => [o.minNodes, o.maxNodes], [2, 4]],
    ['nproc-per-node', '4', (o) => o.nprocPerNode, 4],
    ['rdzv-backend', 'temporal', (o) => o.rdzvId, 'none'],
    ['rdzv-endpoint', 'temporal.example:7300', (o) => o.address, 'temporal.example:7300'],
    ['rdzv-id', 'job-7', (o) => o.rdzvId, 'job-7'],
    ['rdzv-conf', 'join_timeout=60', (o) => o.rdzv.joinTimeoutMs, 60_000],
    ['max-restarts', '3', (o) => o.maxRestarts, 3],
    ['monitor-interval', '0.5', (o) => o.monitorIntervalMs, 500],
    ['role', 'trainer', (o) => o.role, 'trainer'],
    ['log-dir', '/tmp/logs', (o) => o.logDir, '/tmp/logs'],
    ['redirects', '3', (o) => o.redirects, '3'],
    ['tee', '0:1,1:2', (o) => o.tee, '0:1,1:2'],
    ['local-ranks-filter', '0,2', (o) => o.localRanksFilter, [0, 2]],
    ['local-addr', '10.0.0.5', (o) => o.localAddr, '10.0.0.5'],
    ['shutdown-timeout', '2.5', (o) => o.shutdownTimeoutMs, 2500],
    ['node-id', 'gpu-box-1', (o) => o.nodeId, 'gpu-box-1'],
    ['checkpoint-dir', '/shared/ckpt', (o) => o.checkpointDir, '/shared/ckpt'],
    ['keep-checkpoints', '3', (o) => o.keepCheckpoints, 3],
    ['task-queue', 'tq', (o) => o.taskQueue, 'tq'],
    ['checkpoint-signal', 'usr2', (o) => o.checkpointSignal, 'SIGUSR2'],
    ['leave-grace', '1m', (o) => o.leaveGraceMs, 60_000],
    ['leave-grace', '0', (o) => o.leaveGraceMs, 0],
  ];
  for (const [name, value, pick, expected] of cases) {
    const under = name.replace(/-/g, '_');
    const spellings = [[`--${name}`, value], [`--${name}=${value}`], [`--${under}`, value], [`--${under}=${value}`]];
    it.each(spellings)(`--${name}: %s`, (...words: string[]) => {
      expect(pick(run([...words, 'train.py']))).toEqual(expected);
    });
  }

  it.each([
    [['-r', '3'], 'redirects', '3'],
    [['-r3'], 'redirects', '3'],
    [['-t', '1'], 'tee', '1'],
    [['-t2'], 'tee', '2'],
  ] as const)('short %j', (words, field, expected) => {
    expect(run([...words, 't.py'])[field]).toBe(expected);
  });

  it.each([
    [['--standalone'], (o: RunOptions) => o.standalone],
    [['-m'], (o: RunOptions) => o.entrypoint.module],
    [['--module'], (o: RunOptions) => o.entrypoint.module],
    [['--no-python'], (o: RunOptions) => o.entrypoint.noPython],
    [['--no_python'], (o: RunOptions) => o.entrypoint.noPython],
    [['--no-coordinator'], (o: RunOptions) => !o.coordinator],
    [['--no_coordinator'], (o: RunOptions) => !o.coordinator],
  ])('switch %j', (words, on) => {
    expect(on(run([...words, 't.py']))).toBe(true);
  });

  it('takes the last of repeated flags, whatever their spelling', () => {
    expect(run(['--nproc-per-node', '2', '--nproc_per_node=3', 't.py']).nprocPerNode).toBe(3);
  });
});

describe('PET_* variables, and flags over them', () => {
  const cases: Array<[env: NodeJS.ProcessEnv, pick: (o: RunOptions) => unknown, expected: unknown, flag: string[], flagged: unknown]> = [
    [{ PET_NNODES: '1:3' }, (o) => [o.minNodes, o.maxNodes], [1, 3], ['--nnodes', '2'], [2, 2]],
    [{ PET_NPROC_PER_NODE: '4' }, (o) => o.nprocPerNode, 4, ['--nproc-per-node', '2'], 2],
    [{ PET_RDZV_ID: 'from-env' }, (o) => o.rdzvId, 'from-env', ['--rdzv-id', 'from-flag'], 'from-flag'],
    [{ PET_RDZV_ENDPOINT: 'env-host:1' }, (o) => o.address, 'env-host:1', ['--rdzv-endpoint', 'flag-host:2'], 'flag-host:2'],
    [{ PET_RDZV_BACKEND: 'temporal' }, (o) => o.rdzvId, 'none', ['--rdzv-backend', 'temporal'], 'none'],
    [{ PET_RDZV_CONF: 'heartbeat_timeout=3' }, (o) => o.rdzv.heartbeatTimeoutMs, 3000, ['--rdzv-conf', 'heartbeat_timeout=4'], 4000],
    [{ PET_MAX_RESTARTS: '5' }, (o) => o.maxRestarts, 5, ['--max-restarts', '1'], 1],
    [{ PET_MONITOR_INTERVAL: '1' }, (o) => o.monitorIntervalMs, 1000, ['--monitor-interval', '2'], 2000],
    [{ PET_ROLE: 'env-role' }, (o) => o.role, 'env-role', ['--role', 'flag-role'], 'flag-role'],
    [{ PET_LOG_DIR: '/env' }, (o) => o.logDir, '/env', ['--log-dir', '/flag'], '/flag'],
    [{ PET_REDIRECTS: '1' }, (o) => o.redirects, '1', ['-r', '2'], '2'],
    [{ PET_TEE: '3' }, (o) => o.tee, '3', ['--tee', '0'], '0'],
    [{ PET_LOCAL_RANKS_FILTER: '1' }, (o) => o.localRanksFilter, [1], ['--local-ranks-filter', '0'], [0]],
    [{ PET_LOCAL_ADDR: 'env-addr' }, (o) => o.localAddr, 'env-addr', ['--local-addr', 'flag-addr'], 'flag-addr'],
    [{ PET_STANDALONE: '1' }, (o) => o.standalone, true, ['--standalone'], true],
    [{ PET_STANDALONE: '0' }, (o) => o.standalone, false, ['--standalone'], true],
    [{ PET_MODULE: '1' }, (o) => o.entrypoint.module, true, ['-m'], true],
    [{ PET_NO_PYTHON: '1' }, (o) => o.entrypoint.noPython, true, ['--no-python'], true],
    [{ TEMPORAL_NAMESPACE: 'ns-env' }, (o) => o.namespace, 'ns-env', ['--namespace', 'ns-flag'], 'ns-flag'],
  ];
  it.each(cases)('%j', (env, pick, expected, flag, flagged) => {
    expect(pick(run(['t.py'], env))).toEqual(expected);
    expect(pick(run([...flag, 't.py'], env))).toEqual(flagged);
  });

  it('treats an empty variable as unset', () => {
    expect(run(['t.py'], { PET_NNODES: '', PET_RDZV_ID: '' })).toMatchObject({ minNodes: 1, rdzvId: 'none' });
  });

  it('notes the ignored PET_* variables it accepts', () => {
    const o = run(['t.py'], { PET_MASTER_ADDR: '10.0.0.1', PET_MASTER_PORT: '29500', PET_NODE_RANK: '1' });
    expect(o.notes).toEqual([
      'PET_NODE_RANK 1 ignored: group ranks are assigned by the job workflow at each rendezvous',
      'PET_MASTER_ADDR 10.0.0.1 ignored: the job workflow sets MASTER_ADDR to group rank 0\'s address',
      'PET_MASTER_PORT 29500 ignored: the job workflow sets MASTER_PORT to a port group rank 0 reserved',
    ]);
  });

  it('notes that --api-key on its command line shows in ps; the variable says nothing', () => {
    expect(run(['--api-key', 'k1', 't.py']).notes).toEqual([
      '--api-key on the command line can be read by every local user (ps, /proc/PID/cmdline); set TEMPORAL_API_KEY or use --api-key-file instead',
    ]);
    expect(run(['t.py'], { TEMPORAL_API_KEY: 'k1' }).notes).toEqual([]);
  });

  it('rejects a PET_* switch that is not a number, as int() would', () => {
    expect(usageError(['t.py'], { PET_STANDALONE: 'yes' }).message).toBe('PET_STANDALONE yes: expected 0 or 1');
  });

  it('names the variable when its value is bad', () => {
    expect(usageError(['t.py'], { PET_NNODES: '3:2' }).message).toBe('PET_NNODES 3:2: minimum (3) exceeds maximum (2)');
  });
});

describe('the Temporal endpoint', () => {
  it('falls back from the flags to PET_RDZV_ENDPOINT, then TEMPORAL_ADDRESS', () => {
    const env = { PET_RDZV_ENDPOINT: 'pet:1', TEMPORAL_ADDRESS: 'temporal:2' };
    expect(run(['t.py'], env).address).toBe('pet:1');
    expect(run(['t.py'], { TEMPORAL_ADDRESS: 'temporal:2' }).connection.address).toBe('temporal:2');
    expect(run(['--address', 'flag:3', 't.py'], env).address).toBe('flag:3');
    expect(run(['--rdzv-endpoint', 'flag:4', 't.py'], env).address).toBe('flag:4');
    expect(run(['--rdzv-endpoint', 'same:5', '--address', 'same:5', 't.py']).address).toBe('same:5');
  });

  it('adds Temporal\'s port when there is none', () => {
    expect(run(['--rdzv-endpoint', 'frontend', 't.py']).address).toBe('frontend:7233');
    expect(run(['--rdzv-endpoint', '[::1]:7300', 't.py']).address).toBe('[::1]:7300');
  });

  it('rejects a malformed endpoint and a conflicting --address', () => {
    expect(usageError(['--rdzv-endpoint', 'a:b', 't.py']).message).toBe('--rdzv-endpoint a:b: expected HOST:PORT');
    expect(usageError(['--rdzv-endpoint', 'a:1', '--address', 'b:2', 't.py']).message).toBe(
      '--rdzv-endpoint a:1: conflicts with --address b:2; give one of them',
    );
  });

  it('takes the connection options of the other commands', () => {
    const o = run(['--api-key', 'k', '--tls-server-name', 'x.example', '-n', 'prod', 't.py']);
    expect(o.connection).toEqual({ address: 'localhost:7233', namespace: 'prod', apiKey: 'k', tls: { serverName: 'x.example' } });
    expect(o.namespace).toBe('prod');
  });
});

describe('the script and its arguments', () => {
  it('passes everything after SCRIPT through untouched, even our own flags', () => {
    const words = ['--nnodes', '5', '--foo', '-m', 'x', '--', '--help', '-r', '3', '${local_rank}'];
    const o = run(['--nproc-per-node', '2', 'train.py', ...words]);
    expect(o.entrypoint).toEqual({ script: 'train.py', args: words, module: false, noPython: false });
    expect(o).toMatchObject({ minNodes: 1, nprocPerNode: 2, redirects: '0' });
  });

  it('runs a module with -m', () => {
    expect(run(['-m', 'pkg.train', '--lr', '0.1']).entrypoint).toEqual({
      script: 'pkg.train',
      args: ['--lr', '0.1'],
      module: true,
      noPython: false,
    });
  });

  it('runs a program with --no-python', () => {
    expect(run(['--no-python', 'bash', '-c', 'echo hi']).entrypoint).toEqual({
      script: 'bash',
      args: ['-c', 'echo hi'],
      module: false,
      noPython: true,
    });
  });

  it('ends options at --', () => {
    expect(run(['--', '--weird-name.py', 'a']).entrypoint).toMatchObject({ script: '--weird-name.py', args: ['a'] });
  });

  it('shows help only for -h/--help before SCRIPT', () => {
    expect(() => run(['--help'])).toThrow(HelpRequested);
    expect(() => run(['-h', 't.py'])).toThrow(HelpRequested);
    expect(run(['t.py', '--help']).entrypoint.args).toEqual(['--help']);
  });
});

describe('nnodes and nproc-per-node forms', () => {
  it.each([
    ['2', 2, 2],
    ['1:4', 1, 4],
    ['3:3', 3, 3],
  ])('--nnodes %s', (value, min, max) => {
    expect(run(['--nnodes', value, 't.py'])).toMatchObject({ minNodes: min, maxNodes: max });
  });

  it.each([
    ['auto', 8],
    ['cpu', 8],
    ['3', 3],
  ])('--nproc-per-node %s', (value, n) => {
    expect(run(['--nproc-per-node', value, 't.py']).nprocPerNode).toBe(n);
  });
});

describe('bad input: one line naming the flag and the value', () => {
  const hint =
    'telastic rendezvous runs on Temporal; drop --rdzv-backend or use --rdzv-backend temporal ' +
    'and point --rdzv-endpoint at the Temporal frontend';
  const cases: Array<[argv: string[], message: string, field: string, value?: string]> = [
    [['--nnodes', '3:2', 't.py'], '--nnodes 3:2: minimum (3) exceeds maximum (2)', '--nnodes', '3:2'],
    [['--nnodes', '0', 't.py'], '--nnodes 0: must be at least 1', '--nnodes', '0'],
    [['--nnodes', '0:2', 't.py'], '--nnodes 0:2: must be at least 1', '--nnodes', '0:2'],
    [['--nnodes', '1:2:3', 't.py'], '--nnodes 1:2:3: expected N or MIN:MAX', '--nnodes', '1:2:3'],
    [['--nnodes', 'two', 't.py'], '--nnodes two: expected N or MIN:MAX', '--nnodes', 'two'],
    [[], 'missing SCRIPT: telastic run [options] SCRIPT [ARGS…]', 'SCRIPT'],
    [['--nnodes', '2'], 'missing SCRIPT: telastic run [options] SCRIPT [ARGS…]', 'SCRIPT'],
    [['--frobnicate', 't.py'], 'unknown option --frobnicate', '--frobnicate'],
    [['--frobnicate=1', 't.py'], 'unknown option --frobnicate=1', '--frobnicate=1'],
    [['-x', 't.py'], 'unknown option -x', '-x'],
    [['--standalone=1', 't.py'], '--standalone=1: --standalone takes no value', '--standalone', '1'],
    [['--log-dir'], '--log-dir: expected a value', '--log-dir'],
    [['--shutdown-timeout', '-1', 't.py'], '--shutdown-timeout -1: must be a number >= 0', '--shutdown-timeout', '-1'],
    [['--shutdown-timeout', 'soon', 't.py'], '--shutdown-timeout soon: must be a number >= 0', '--shutdown-timeout', 'soon'],
    [['--rdzv-conf', 'heartbeat_timeout=-5', 't.py'], '--rdzv-conf heartbeat_timeout=-5: must be a positive number', '--rdzv-conf', 'heartbeat_timeout=-5'],
    [['--rdzv-conf', 'join_timeout=abc', 't.py'], '--rdzv-conf join_timeout=abc: must be a positive number', '--rdzv-conf', 'join_timeout=abc'],
    [['--rdzv-conf', 'join_timeout=0', 't.py'], '--rdzv-conf join_timeout=0: must be a positive number', '--rdzv-conf', 'join_timeout=0'],
    [['--rdzv-conf', 'last_call_timeout=-1', 't.py'], '--rdzv-conf last_call_timeout=-1: must be a number >= 0', '--rdzv-conf', 'last_call_timeout=-1'],
    [['--rdzv-conf', 'join_timeout', 't.py'], '--rdzv-conf join_timeout: join_timeout needs a value', '--rdzv-conf', 'join_timeout'],
    [['--rdzv-conf', 'a=1,=2', 't.py'], '--rdzv-conf =2: expected KEY=VALUE,KEY=VALUE,…', '--rdzv-conf', '=2'],
    [['--rdzv-backend', 'etcd', 't.py'], `--rdzv-backend etcd: ${hint}`, '--rdzv-backend', 'etcd'],
    [['--rdzv-backend', 'c10d', 't.py'], `--rdzv-backend c10d: ${hint}`, '--rdzv-backend', 'c10d'],
    [['--rdzv_backend=etcd-v2', 't.py'], `--rdzv-backend etcd-v2: ${hint}`, '--rdzv-backend', 'etcd-v2'],
    [['--rdzv-backend', 'static', 't.py'], `--rdzv-backend static: ${hint}`, '--rdzv-backend', 'static'],
    [['--nproc-per-node', 'gpu', 't.py'], '--nproc-per-node gpu: telastic runs CPU workers only; use a number, cpu or auto', '--nproc-per-node', 'gpu'],
    [['--nproc-per-node', 'many', 't.py'], '--nproc-per-node many: expected a number, cpu or auto', '--nproc-per-node', 'many'],
    [['--nproc-per-node', '0', 't.py'], '--nproc-per-node 0: must be at least 1', '--nproc-per-node', '0'],
    [['--max-restarts', '-1', 't.py'], '--max-restarts -1: must be an integer >= 0', '--max-restarts', '-1'],
    [['--max-restarts', '1.5', 't.py'], '--max-restarts 1.5: must be an integer >= 0', '--max-restarts', '1.5'],
    [['--monitor-interval', '0', 't.py'], '--monitor-interval 0: must be a positive number', '--monitor-interval', '0'],
    [['-r', '4', 't.py'], '--redirects 4: expected 0-3 or LOCAL_RANK:0-3,… (0 none, 1 stdout, 2 stderr, 3 both)', '--redirects', '4'],
    [['--tee', '0:1,', 't.py'], '--tee 0:1,: expected 0-3 or LOCAL_RANK:0-3,… (0 none, 1 stdout, 2 stderr, 3 both)', '--tee', '0:1,'],
    [['--local-ranks-filter', '0,x', 't.py'], '--local-ranks-filter 0,x: expected a comma-separated list of local ranks, e.g. 0,1,2', '--local-ranks-filter', '0,x'],
    [['--run-path', 't.py'], '--run-path: not supported; telastic runs each worker as its own process (drop it)', '--run-path'],
    [['-m', '--no-python', 't.py'], '--module (-m) and --no-python cannot be used together', '--module'],
    [['--start-method', 'thread', 't.py'], '--start-method thread: expected spawn, fork or forkserver', '--start-method', 'thread'],
    [['--master-port', 'x', 't.py'], '--master-port x: must be an integer >= 0', '--master-port', 'x'],
    [['--rdzv-id', 'my job', 't.py'], '--rdzv-id "my job": letters, digits and . _ : @ - only', '--rdzv-id', 'my job'],
    [['--role', '', 't.py'], '--role "": must not be empty', '--role', ''],
    [['--keep-checkpoints', '0', 't.py'], '--keep-checkpoints 0: must be an integer >= 1', '--keep-checkpoints', '0'],
    [['--node-id', '-bad', 't.py'], '--node-id -bad: letters, digits and . _ : @ - only', '--node-id', '-bad'],
    [['--checkpoint-signal', 'SIGKILL', 't.py'], '--checkpoint-signal SIGKILL: expected a signal a process can catch, such as SIGUSR1 or SIGUSR2', '--checkpoint-signal', 'SIGKILL'],
    [['--checkpoint-signal', 'USR9', 't.py'], '--checkpoint-signal USR9: expected a signal a process can catch, such as SIGUSR1 or SIGUSR2', '--checkpoint-signal', 'USR9'],
    [['--leave-grace', 'soon', 't.py'], '--leave-grace soon: expected a duration such as 90s, 30m, 24h or 7d', '--leave-grace', 'soon'],
  ];
  // A rest parameter, so jest does not take a missing `value` for a `done` callback.
  it.each(cases)('%j', (...[argv, message, field, value]: (typeof cases)[number]) => {
    const err = usageError(argv);
    expect(err.message).toBe(message);
    expect(err.message).not.toContain('\n');
    expect(err.field).toBe(field);
    expect(err.value).toBe(value);
  });

  it('names PET_RDZV_BACKEND when the backend came from there', () => {
    expect(usageError(['t.py'], { PET_RDZV_BACKEND: 'c10d' }).message).toBe(`PET_RDZV_BACKEND c10d: ${hint}`);
  });
});

describe('rdzv-conf', () => {
  it('compiles seconds (floats too) to milliseconds and keeps the other defaults', () => {
    const o = run(['--rdzv-conf', ' join_timeout = 1.5 ,last_call_timeout=0,prepare_timeout=0.25', 't.py']);
    expect(o.rdzv).toEqual({ joinTimeoutMs: 1500, lastCallTimeoutMs: 0, heartbeatTimeoutMs: 10_000, prepareTimeoutMs: 250, groupSize: 64 });
  });

  it('group_size is a node count, 1 to 1000', () => {
    expect(run(['--rdzv-conf', 'group_size=8', 't.py']).rdzv.groupSize).toBe(8);
    for (const bad of ['0', '2.5', '1001', 'x']) expect(usageError(['--rdzv-conf', `group_size=${bad}`, 't.py']).message).toBe(`--rdzv-conf group_size=${bad}: group_size must be an integer from 1 to 1000`);
  });

  it('accepts keys it does not use, with a note', () => {
    const o = run(['--rdzv-conf', 'close_timeout=5,is_host=1', 't.py']);
    expect(o.rdzv.joinTimeoutMs).toBe(600_000);
    expect(o.notes).toEqual([
      '--rdzv-conf close_timeout=5: not used by telastic; ignored',
      '--rdzv-conf is_host=1: not used by telastic; ignored',
    ]);
  });
});

describe('--standalone, as torchrun', () => {
  it('uses a fresh rdzv id and ignores the rendezvous flags, with a note', () => {
    const o = run(['--standalone', '--rdzv-backend', 'c10d', '--rdzv-id', 'x', 't.py']);
    expect(o).toMatchObject({ standalone: true, rdzvId: 'uuid-1' });
    expect(o.notes).toEqual(['--rdzv-backend, --rdzv-id ignored with --standalone']);
  });
});

describe('accepted and ignored', () => {
  it('notes --master-addr, --master-port, --node-rank and --start-method', () => {
    const o = run(['--master-addr', '10.0.0.1', '--master_port=29500', '--node-rank', '0', '--start-method', 'fork', 't.py']);
    expect(o.notes).toHaveLength(4);
    expect(o.notes[0]).toBe('--node-rank 0 ignored: group ranks are assigned by the job workflow at each rendezvous');
    expect(o.notes.join('\n')).toContain('--master-addr 10.0.0.1 ignored');
  });

  it('accepts --logs-specs with a note', () => {
    const o = run(['--event-log-handler', 'null', '--logs-specs', 'x', 't.py']);
    expect(o.notes).toEqual(['--logs-specs x ignored: worker logs follow --log-dir, --redirects and --tee']);
  });
});

describe('torchrun\'s worker flags', () => {
  it('--signals-to-handle: a list of signal names, blanks trimmed, flag or PET_SIGNALS_TO_HANDLE', () => {
    expect(run(['--signals-to-handle', 'SIGTERM, SIGUSR1', 't.py']).signalsToHandle).toEqual(['SIGTERM', 'SIGUSR1']);
    expect(run(['t.py'], { PET_SIGNALS_TO_HANDLE: 'SIGHUP' }).signalsToHandle).toEqual(['SIGHUP']);
    expect(usageError(['--signals-to-handle', 'SIGTERM,TERM', 't.py']).message).toBe(
      '--signals-to-handle SIGTERM,TERM: TERM is not a signal a process can catch: expected names such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1',
    );
    expect(usageError(['--signals_to_handle=SIGKILL', 't.py']).message).toMatch(/^--signals-to-handle SIGKILL: SIGKILL is not a signal/);
    expect(usageError(['--signals-to-handle', 'SIGTERM,', 't.py']).message).toMatch(/: empty signal name/);
  });

  it('--virtual-local-rank: a switch; more local ranks than CUDA_VISIBLE_DEVICES lists is refused', () => {
    expect(run(['--virtual-local-rank', 't.py']).virtualLocalRank).toBe(true);
    expect(run(['t.py'], { PET_VIRTUAL_LOCAL_RANK: '1' }).virtualLocalRank).toBe(true);
    expect(run(['--nproc-per-node', '2', '--virtual-local-rank', 't.py'], { CUDA_VISIBLE_DEVICES: '3,5' }).virtualLocalRank).toBe(true);
    expect(usageError(['--nproc-per-node', '3', '--virtual-local-rank', 't.py'], { CUDA_VISIBLE_DEVICES: '3,5' }).message).toBe(
      '--virtual-local-rank: local rank 2 exceeds the devices in CUDA_VISIBLE_DEVICES=3,5 (--nproc-per-node 3)',
    );
  });

  it('--numa-binding: torch\'s AffinityMode values', () => {
    expect(run(['--numa-binding', 'core-complex', 't.py']).numaBinding).toBe('core-complex');
    expect(usageError(['--numa_binding', 'cores', 't.py']).message).toBe('--numa-binding cores: expected one of node, socket, exclusive, core-complex');
  });

  it('--duplicate-*-filters: torch\'s comma list (",," is a comma); they need --log-dir', () => {
    const o = run(['--log-dir', 'logs', '--duplicate-stdout-filters', 'apple,orange,,pear', '--duplicate_stderr_filters=', 't.py']);
    expect(o.duplicateStdoutFilters).toEqual(['apple', 'orange,pear']);
    expect(o.duplicateStderrFilters).toEqual(['']); // as torch: one empty filter, which every line matches
    expect(run(['--log-dir', 'logs', 't.py'], { PET_DUPLICATE_STDERR_FILTERS: 'loss' }).duplicateStderrFilters).toEqual(['loss']);
    expect(usageError(['--duplicate-stdout-filters', 'apple', 't.py']).message).toBe(
      '--duplicate-stdout-filters apple: needs --log-dir (the lines go to <log-dir>/<run id>/attempt_<n>/filtered_*.log)',
    );
  });

  it('--event-log-handler: torch\'s handler names, default null', () => {
    expect(run(['t.py']).eventLogHandler).toBe('null');
    expect(run(['--event-log-handler', 'console', 't.py']).eventLogHandler).toBe('console');
    expect(run(['t.py'], { PET_EVENT_LOG_HANDLER: 'dynamic_rendezvous' }).eventLogHandler).toBe('dynamic_rendezvous');
    expect(usageError(['--event-log-handler', 'file', 't.py']).message).toBe('--event-log-handler file: expected one of null, console, dynamic_rendezvous (the handlers torch registers)');
  });
});

describe('--health-check', () => {
  it('is absent by default; the flag beats TELASTIC_HEALTH_CHECK; the timeout defaults to 30 s', () => {
    expect(run(['train.py']).healthCheck).toBeUndefined();
    expect(run(['--health-check', './hc.sh', 'train.py']).healthCheck).toEqual({ command: './hc.sh', timeoutMs: 30_000 });
    expect(run(['train.py'], { TELASTIC_HEALTH_CHECK: 'nvidia-smi' }).healthCheck).toEqual({ command: 'nvidia-smi', timeoutMs: 30_000 });
    expect(run(['--health-check', 'a', 'train.py'], { TELASTIC_HEALTH_CHECK: 'b', TELASTIC_HEALTH_CHECK_TIMEOUT: '5' }).healthCheck).toEqual({ command: 'a', timeoutMs: 5000 });
    expect(run(['--health-check', 'a', '--health-check-timeout', '2.5', 'train.py']).healthCheck).toEqual({ command: 'a', timeoutMs: 2500 });
  });

  it('a bad timeout is one line naming it', () => {
    expect(usageError(['--health-check', 'a', '--health-check-timeout', '0', 'train.py']).message).toMatch(/^--health-check-timeout 0: /);
    expect(usageError(['train.py'], { TELASTIC_HEALTH_CHECK: 'a', TELASTIC_HEALTH_CHECK_TIMEOUT: 'soon' }).message).toMatch(/^TELASTIC_HEALTH_CHECK_TIMEOUT soon: /);
  });

  it('takes unusable_timeout in --rdzv-conf (absent: the job\'s default, 60 s)', () => {
    expect(run(['train.py']).rdzv.unusableTimeoutMs).toBeUndefined();
    expect(run(['--rdzv-conf', 'unusable_timeout=5', 'train.py']).rdzv.unusableTimeoutMs).toBe(5000);
  });
});
