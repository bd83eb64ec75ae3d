/**
 * The torchrun contract for one worker process: its environment and its command line. Pure:
 * everything comes from the round assignment and the options passed in, nothing from
 * `process`, so the same inputs always give the same worker.
 */
import type { Entrypoint } from '../job/spec';
import type { RoundAssignment } from '../job/assignment';
import { isAgentOnly } from './env-rules';
import type { NumaPlan } from './workers/numa';

export interface WorkerEnvOptions {
  /** The agent's environment; every worker inherits it, then gets torchrun's variables on top. */
  baseEnv: NodeJS.ProcessEnv | Record<string, string | undefined>;
  /** Where the worker writes its error record (torch's `@record`); see `workerLogPaths`. */
  errorFile: string;
  /**
   * TORCHELASTIC_TIMER_FILE: the round's watchdog FIFO when the agent serves torch's timers
   * (`timersServed`). Replaces any value the environment had; without it the environment's is kept.
   */
  timerFile?: string;
  /** TELASTIC_PROGRESS_FILE: where the worker may write its step (src/agent/workers/progress.ts). */
  progressFile?: string;
  /** TORCHELASTIC_RUN_ID. @default the assignment's jobId (the rendezvous id, as in torchrun) */
  jobRunId?: string;
  /**
   * torchrun's `--virtual-local-rank`: LOCAL_RANK=0, and CUDA_VISIBLE_DEVICES the worker's own
   * device: entry LOCAL_RANK of the agent's CUDA_VISIBLE_DEVICES when set, else LOCAL_RANK.
   */
  virtualLocalRank?: boolean;
  /**
   * torchrun's `--signals-to-handle`, which torch puts into the agent's own environment as
   * TORCHELASTIC_SIGNALS_TO_HANDLE, so its workers inherit it.
   */
  signalsToHandle?: readonly string[];
}

/** What `telastic run` passes its node activities for every worker (torchrun's worker flags). */
export interface WorkerLaunchOptions {
  virtualLocalRank?: boolean;
  signalsToHandle?: readonly string[];
  /**
   * `--numa-binding`: the CPU list of each local rank and the command that binds it
   * (src/agent/workers/numa.ts `planNumaBinding`); absent: no binding.
   */
  numa?: NumaPlan;
}

/**
 * The environment of local rank `localRank`: `baseEnv` plus, as strings, exactly what torchrun's
 * LocalElasticAgent sets, plus telastic's own `TELASTIC_*` variables.
 * RANK = rankOffset + LOCAL_RANK (the sum of the local world sizes of lower group ranks plus the
 * local rank). ROLE_RANK = RANK and ROLE_WORLD_SIZE = WORLD_SIZE because a job has one role.
 */
export function buildWorkerEnv(a: RoundAssignment, localRank: number, opts: WorkerEnvOptions): Record<string, string> {
  if (!Number.isInteger(localRank) || localRank < 0 || localRank >= a.localWorldSize) {
    throw new RangeError(`localRank ${localRank} is outside 0..${a.localWorldSize - 1} (localWorldSize ${a.localWorldSize})`);
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.baseEnv)) if (v !== undefined) env[k] = v;

  const rank = a.rankOffset + localRank;
  Object.assign(env, {
    RANK: String(rank),
    LOCAL_RANK: String(localRank),
    WORLD_SIZE: String(a.worldSize),
    LOCAL_WORLD_SIZE: String(a.localWorldSize),
    GROUP_RANK: String(a.groupRank),
    GROUP_WORLD_SIZE: String(a.groupWorldSize),
    ROLE_RANK: String(rank),
    ROLE_NAME: a.role,
    ROLE_WORLD_SIZE: String(a.worldSize),
    MASTER_ADDR: a.masterAddr,
    MASTER_PORT: String(a.masterPort),
    TORCHELASTIC_RESTART_COUNT: String(a.restartCount),
    TORCHELASTIC_MAX_RESTARTS: String(a.maxRestarts),
    TORCHELASTIC_RUN_ID: opts.jobRunId ?? a.jobId,
    TORCHELASTIC_USE_AGENT_STORE: 'False',
    TORCHELASTIC_ERROR_FILE: opts.errorFile,
    // torchrun keeps the agent's value when it has one.
    TORCH_NCCL_ASYNC_ERROR_HANDLING: env.TORCH_NCCL_ASYNC_ERROR_HANDLING ?? '1',
    TELASTIC_JOB_ID: a.jobId,
    TELASTIC_ROUND: String(a.round),
    TELASTIC_NODE_ID: a.nodeId,
  });
  if (opts.virtualLocalRank) {
    // torch's LocalElasticAgent._set_local_rank_env, entry by entry.
    env.LOCAL_RANK = '0';
    const parent = env.CUDA_VISIBLE_DEVICES;
    if (parent === undefined) env.CUDA_VISIBLE_DEVICES = String(localRank);
    else {
      const devices = parent.split(',');
      if (localRank >= devices.length) throw new RangeError(`--virtual-local-rank: local rank ${localRank} exceeds the devices in CUDA_VISIBLE_DEVICES=${parent}`);
      env.CUDA_VISIBLE_DEVICES = devices[localRank]!.trim();
    }
  }
  if (opts.signalsToHandle !== undefined) env.TORCHELASTIC_SIGNALS_TO_HANDLE = opts.signalsToHandle.join(',');
  // torchrun sets this in its own environment when unset and nproc-per-node > 1.
  if (env.OMP_NUM_THREADS === undefined && a.localWorldSize > 1) env.OMP_NUM_THREADS = '1';
  if (opts.timerFile !== undefined) env.TORCHELASTIC_TIMER_FILE = opts.timerFile;
  if (opts.progressFile !== undefined) env.TELASTIC_PROGRESS_FILE = opts.progressFile;
  else delete env.TELASTIC_PROGRESS_FILE; // the agent's own would name a file no one reads
  if (a.checkpointDir !== undefined) env.TELASTIC_CHECKPOINT_DIR = a.checkpointDir;
  // A resume point inherited from the agent's environment would be stale: only this round's counts.
  if (a.resumeFrom !== undefined) env.TELASTIC_RESUME_FROM = a.resumeFrom;
  else delete env.TELASTIC_RESUME_FROM;
  return env;
}

/**
 * A pool agent's environment as its workers inherit it: without the agent's own connection,
 * key-file and settings variables (env-rules.ts `isAgentOnly`: TEMPORAL_*, TELASTIC_*, …), which
 * are the operator's credentials and not for code a submitter chose, except the names the
 * operator passes on with `--pass-env`.
 */
export function poolWorkerBaseEnv(agentEnv: NodeJS.ProcessEnv | Record<string, string | undefined>, passEnv: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(agentEnv)) if (v !== undefined && (!isAgentOnly(k) || passEnv.includes(k))) env[k] = v;
  return env;
}

/**
 * Whether the agent serves torch.distributed.elastic.timer's FIFO: as torchrun's LocalElasticAgent,
 * when its environment has TORCHELASTIC_ENABLE_FILE_TIMER=1 (torch compares the string to "1").
 */
export function timersServed(env: NodeJS.ProcessEnv | Record<string, string | undefined>): boolean {
  return env.TORCHELASTIC_ENABLE_FILE_TIMER === '1';
}

/** `PYTHON_EXEC` as torchrun reads it, else `python3` from PATH. */
export function resolvePythonExec(env: NodeJS.ProcessEnv | Record<string, string | undefined>): string {
  const exec = env.PYTHON_EXEC;
  return exec !== undefined && exec !== '' ? exec : 'python3';
}

/**
 * The command of local rank `localRank`: `pythonExec -u [-m] script args…`, or the script itself
 * with `noPython`. Args go through torchrun's macro substitution (Python's
 * `Template.safe_substitute(local_rank=…)`): `${local_rank}` and `$local_rank` become the local
 * rank, `$$` becomes `$`, anything else is left as written.
 */
export function buildCommand(entry: Entrypoint, localRank: number, pythonExec: string): { file: string; args: string[] } {
  if (entry.module && entry.noPython) {
    throw new Error("entrypoint: module and noPython cannot both be set (torchrun: don't use both '--no-python' and '--module')");
  }
  const args = entry.args.map((arg) => substituteLocalRank(arg, localRank));
  if (entry.noPython) return { file: entry.script, args };
  return { file: pythonExec, args: ['-u', ...(entry.module ? ['-m'] : []), entry.script, ...args] };
}

const TEMPLATE = /\$(?:(\$)|([_a-z][_a-z0-9]*)|\{([_a-z][_a-z0-9]*)\})/gi;

function substituteLocalRank(arg: string, localRank: number): string {
  return arg.replace(TEMPLATE, (whole, escaped: string | undefined, named?: string, braced?: string) => {
    if (escaped) return '$';
    return (named ?? braced) === 'local_rank' ? String(localRank) : whole;
  });
}
