/** The torchrun contract of one worker: environment and command line. */
import { buildCommand, buildWorkerEnv, poolWorkerBaseEnv, resolvePythonExec, timersServed } from '../../src/agent/env';
import type { RoundAssignment } from '../../src/job/assignment';

/** Node B of a 2 nodes × 2 procs job: group rank 1, so its local ranks are global ranks 2 and 3. */
const nodeB: RoundAssignment = {
  jobId: 'job1',
  round: 4,
  nodeId: 'nodeB',
  role: 'default',
  groupRank: 1,
  groupWorldSize: 2,
  rankOffset: 2,
  localWorldSize: 2,
  worldSize: 4,
  masterAddr: '10.0.0.1',
  masterPort: 29500,
  restartCount: 1,
  maxRestarts: 3,
  heartbeatIntervalMs: 1000,
};
const base = { PATH: '/usr/bin:/bin', HOME: '/home/u', UNSET: undefined };

describe('buildWorkerEnv', () => {
  it('gives exactly the torchrun variables, as strings, on top of the base env', () => {
    expect(buildWorkerEnv(nodeB, 1, { baseEnv: base, errorFile: '/tmp/e/1/error.json' })).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/u',
      RANK: '3',
      LOCAL_RANK: '1',
      WORLD_SIZE: '4',
      LOCAL_WORLD_SIZE: '2',
      GROUP_RANK: '1',
      GROUP_WORLD_SIZE: '2',
      ROLE_RANK: '3',
      ROLE_NAME: 'default',
      ROLE_WORLD_SIZE: '4',
      MASTER_ADDR: '10.0.0.1',
      MASTER_PORT: '29500',
      TORCHELASTIC_RESTART_COUNT: '1',
      TORCHELASTIC_MAX_RESTARTS: '3',
      TORCHELASTIC_RUN_ID: 'job1',
      TORCHELASTIC_USE_AGENT_STORE: 'False',
      TORCHELASTIC_ERROR_FILE: '/tmp/e/1/error.json',
      TORCH_NCCL_ASYNC_ERROR_HANDLING: '1',
      OMP_NUM_THREADS: '1',
      TELASTIC_JOB_ID: 'job1',
      TELASTIC_ROUND: '4',
      TELASTIC_NODE_ID: 'nodeB',
    });
  });

  it('numbers ranks across both nodes: RANK = rankOffset + LOCAL_RANK', () => {
    const nodeA = { ...nodeB, nodeId: 'nodeA', groupRank: 0, rankOffset: 0 };
    const ranks = [nodeA, nodeB].flatMap((a) =>
      [0, 1].map((lr) => buildWorkerEnv(a, lr, { baseEnv: {}, errorFile: 'e' })).map((e) => [e.GROUP_RANK, e.LOCAL_RANK, e.RANK, e.ROLE_RANK]),
    );
    expect(ranks).toEqual([
      ['0', '0', '0', '0'],
      ['0', '1', '1', '1'],
      ['1', '0', '2', '2'],
      ['1', '1', '3', '3'],
    ]);
  });

  it('sets OMP_NUM_THREADS=1 only when unset and more than one local process', () => {
    const opts = { errorFile: 'e' };
    expect(buildWorkerEnv(nodeB, 0, { ...opts, baseEnv: {} }).OMP_NUM_THREADS).toBe('1');
    expect(buildWorkerEnv(nodeB, 0, { ...opts, baseEnv: { OMP_NUM_THREADS: '8' } }).OMP_NUM_THREADS).toBe('8');
    const single = { ...nodeB, localWorldSize: 1, worldSize: 3 };
    expect(buildWorkerEnv(single, 0, { ...opts, baseEnv: {} })).not.toHaveProperty('OMP_NUM_THREADS');
  });

  it('keeps TORCH_NCCL_ASYNC_ERROR_HANDLING from the base env, else 1', () => {
    const env = buildWorkerEnv(nodeB, 0, { baseEnv: { TORCH_NCCL_ASYNC_ERROR_HANDLING: '3' }, errorFile: 'e' });
    expect(env.TORCH_NCCL_ASYNC_ERROR_HANDLING).toBe('3');
  });

  it('overrides stale torchrun variables of the agent and honours jobRunId', () => {
    const env = buildWorkerEnv(nodeB, 0, { baseEnv: { RANK: '99', WORLD_SIZE: '99' }, errorFile: 'e', jobRunId: 'run-7' });
    expect([env.RANK, env.WORLD_SIZE, env.TORCHELASTIC_RUN_ID]).toEqual(['2', '4', 'run-7']);
  });

  it('adds checkpoint variables when the assignment has them, and drops a stale resume point', () => {
    const withCkpt = { ...nodeB, checkpointDir: '/shared/ckpt', resumeFrom: '/shared/ckpt/step_100' };
    const env = buildWorkerEnv(withCkpt, 0, { baseEnv: {}, errorFile: 'e' });
    expect([env.TELASTIC_CHECKPOINT_DIR, env.TELASTIC_RESUME_FROM]).toEqual(['/shared/ckpt', '/shared/ckpt/step_100']);
    const stale = buildWorkerEnv({ ...nodeB, checkpointDir: '/shared/ckpt' }, 0, { baseEnv: { TELASTIC_RESUME_FROM: '/old' }, errorFile: 'e' });
    expect(stale).not.toHaveProperty('TELASTIC_RESUME_FROM');
    expect(stale.TELASTIC_CHECKPOINT_DIR).toBe('/shared/ckpt');
  });

  it("TORCHELASTIC_TIMER_FILE: the agent's FIFO replaces the environment's; without one the environment's is kept (torchrun)", () => {
    const env = { ...base, TORCHELASTIC_TIMER_FILE: '/elsewhere/fifo' };
    expect(buildWorkerEnv(nodeB, 0, { baseEnv: env, errorFile: '/e', timerFile: '/run/round_4/watchdog_timer' }).TORCHELASTIC_TIMER_FILE).toBe('/run/round_4/watchdog_timer');
    expect(buildWorkerEnv(nodeB, 0, { baseEnv: env, errorFile: '/e' }).TORCHELASTIC_TIMER_FILE).toBe('/elsewhere/fifo');
    expect(buildWorkerEnv(nodeB, 0, { baseEnv: base, errorFile: '/e' })).not.toHaveProperty('TORCHELASTIC_TIMER_FILE');
  });

  it('--virtual-local-rank: LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES narrowed to the worker\'s entry (torch\'s _set_local_rank_env)', () => {
    const env = (localRank: number, baseEnv: Record<string, string | undefined>) =>
      buildWorkerEnv(nodeB, localRank, { baseEnv, errorFile: '/e', virtualLocalRank: true });
    expect([0, 1].map((r) => [env(r, base).LOCAL_RANK, env(r, base).CUDA_VISIBLE_DEVICES])).toEqual([['0', '0'], ['0', '1']]);
    expect(env(1, { CUDA_VISIBLE_DEVICES: '4, 6' }).CUDA_VISIBLE_DEVICES).toBe('6'); // stripped, as torch
    expect(env(1, { CUDA_VISIBLE_DEVICES: 'GPU-a,GPU-b' }).CUDA_VISIBLE_DEVICES).toBe('GPU-b');
    expect(() => env(1, { CUDA_VISIBLE_DEVICES: '4' })).toThrow('--virtual-local-rank: local rank 1 exceeds the devices in CUDA_VISIBLE_DEVICES=4');
    // Without it, both are left as they were: the local rank and the agent's devices.
    const plain = buildWorkerEnv(nodeB, 1, { baseEnv: { CUDA_VISIBLE_DEVICES: '4,6' }, errorFile: '/e' });
    expect([plain.LOCAL_RANK, plain.CUDA_VISIBLE_DEVICES]).toEqual(['1', '4,6']);
  });

  it('TORCHELASTIC_SIGNALS_TO_HANDLE: the --signals-to-handle list, as torch puts it in the agent\'s environment', () => {
    expect(buildWorkerEnv(nodeB, 0, { baseEnv: base, errorFile: '/e', signalsToHandle: ['SIGTERM', 'SIGUSR1'] }).TORCHELASTIC_SIGNALS_TO_HANDLE).toBe('SIGTERM,SIGUSR1');
    expect(buildWorkerEnv(nodeB, 0, { baseEnv: base, errorFile: '/e' }).TORCHELASTIC_SIGNALS_TO_HANDLE).toBeUndefined();
  });

  it('rejects a local rank outside the node', () => {
    expect(() => buildWorkerEnv(nodeB, 2, { baseEnv: {}, errorFile: 'e' })).toThrow('localRank 2 is outside 0..1');
  });
});

describe('buildCommand', () => {
  const entry = { script: 'train.py', args: ['--rank=${local_rank}', '--out', 'dir_$local_rank', '$$HOME', '${other}'], module: false, noPython: false };

  it('runs the script unbuffered under python, substituting ${local_rank} as torchrun does', () => {
    expect(buildCommand(entry, 1, '/usr/bin/python3')).toEqual({
      file: '/usr/bin/python3',
      args: ['-u', 'train.py', '--rank=1', '--out', 'dir_1', '$HOME', '${other}'],
    });
  });

  it('runs a module with -m', () => {
    expect(buildCommand({ ...entry, script: 'pkg.train', args: [], module: true }, 0, 'python3')).toEqual({
      file: 'python3',
      args: ['-u', '-m', 'pkg.train'],
    });
  });

  it('runs the script itself with noPython', () => {
    expect(buildCommand({ ...entry, script: './run.sh', args: ['${local_rank}'], noPython: true }, 3, 'python3')).toEqual({
      file: './run.sh',
      args: ['3'],
    });
  });

  it('refuses module together with noPython', () => {
    expect(() => buildCommand({ ...entry, module: true, noPython: true }, 0, 'python3')).toThrow(/module and noPython/);
  });
});

test("timersServed: only TORCHELASTIC_ENABLE_FILE_TIMER=1, compared as torch does (the string '1')", () => {
  expect(timersServed({ TORCHELASTIC_ENABLE_FILE_TIMER: '1' })).toBe(true);
  for (const v of [undefined, '', '0', 'true', ' 1', '01']) expect(timersServed({ TORCHELASTIC_ENABLE_FILE_TIMER: v })).toBe(false);
});

describe('resolvePythonExec', () => {
  it('reads PYTHON_EXEC, else python3', () => {
    expect(resolvePythonExec({ PYTHON_EXEC: '/opt/py/bin/python' })).toBe('/opt/py/bin/python');
    expect(resolvePythonExec({ PYTHON_EXEC: '' })).toBe('python3');
    expect(resolvePythonExec({})).toBe('python3');
  });
});

describe('poolWorkerBaseEnv: a pool agent keeps its own credentials from its workers', () => {
  const agentEnv = {
    PATH: '/usr/bin', WANDB_API_KEY: 'w', PYTHONPATH: '/opt/lib', TEMPORAL_API_KEY: 'sk', TEMPORAL_ADDRESS: 'a:1', TEMPORAL_TLS_KEY: '/k.pem',
    TELASTIC_ENCRYPTION_KEY_FILE: '/seal.key', TELASTIC_LEDGER: 'postgres://u:p@h/db', PGPASSWORD: 'p', UNSET: undefined,
  };

  it('drops TEMPORAL_*, TELASTIC_* and the ledger password; keeps the rest of the operator\'s environment', () => {
    expect(poolWorkerBaseEnv(agentEnv, [])).toEqual({ PATH: '/usr/bin', WANDB_API_KEY: 'w', PYTHONPATH: '/opt/lib' });
  });

  it('keeps exactly the names --pass-env gives', () => {
    expect(poolWorkerBaseEnv(agentEnv, ['TEMPORAL_ADDRESS', 'NOT_SET'])).toEqual({ PATH: '/usr/bin', WANDB_API_KEY: 'w', PYTHONPATH: '/opt/lib', TEMPORAL_ADDRESS: 'a:1' });
  });
});
