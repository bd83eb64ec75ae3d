/**
 * The option table of `telastic run`: torchrun's flags (names and PET_* variables exactly as
 * torch/distributed/run.py declares them), telastic's own, and the Temporal connection options.
 * Commander only splits argv here; `run-options.ts` resolves flag > PET_* > default and validates.
 */
import { Command, Option } from 'commander';
import { addConnectionOptions } from './connection-options';

export const RUN_USAGE = 'telastic run [options] SCRIPT [ARGS…]';

/** One option of `telastic run`. `pet` is the variable torchrun's argparse `env` action reads. */
export interface RunFlag {
  /** Dashed long name without `--`; the underscored spelling is accepted too when it has `-`. */
  name: string;
  short?: string;
  /** Value placeholder; absent for switches. */
  arg?: string;
  pet: boolean;
  help: string;
}

const flag = (name: string, arg: string | undefined, help: string, pet = true, short?: string): RunFlag => ({
  name,
  arg,
  help,
  pet,
  short,
});

/** torchrun's flags, in its order. */
export const TORCHRUN_FLAGS: readonly RunFlag[] = [
  flag('nnodes', 'N|MIN:MAX', 'number of nodes, or the elastic range MIN:MAX (default 1:1)'),
  flag('nproc-per-node', 'N|cpu|auto', 'worker processes per node; cpu and auto mean one per CPU (default 1)'),
  flag('rdzv-backend', 'backend', 'rendezvous backend; only "temporal" (default temporal)'),
  flag('rdzv-endpoint', 'host:port', 'the Temporal frontend (default TEMPORAL_ADDRESS or localhost:7233)'),
  flag('rdzv-id', 'id', 'job id shared by all nodes; the job workflow id (default "none")'),
  flag('rdzv-conf', 'k=v,…', 'join_timeout=600,last_call_timeout=30,heartbeat_timeout=10,prepare_timeout=5,unusable_timeout=60 (seconds),group_size=64 (nodes per group workflow)'),
  flag('standalone', undefined, 'single machine: start an embedded Temporal dev server, fresh --rdzv-id'),
  flag('max-restarts', 'n', 'failure restarts of the whole job before it fails (default 0)'),
  flag('monitor-interval', 'seconds', 'how often worker processes are checked (default 0.1)'),
  flag('start-method', 'method', 'accepted for compatibility and ignored (spawn, fork, forkserver)'),
  flag('event-log-handler', 'name', 'console prints torch\'s worker status events (START, SUCCEEDED, FAILED, TERMINATED) as JSON lines on stderr; null and dynamic_rendezvous record none (default null)'),
  flag('role', 'role', 'role of this node\'s workers (default "default")'),
  flag('module', undefined, 'run SCRIPT as a Python module, like python -m', true, 'm'),
  flag('no-python', undefined, 'run SCRIPT itself, not with python'),
  flag('run-path', undefined, 'not supported: telastic runs each worker as its own process'),
  flag('log-dir', 'dir', 'base directory for worker log files'),
  flag('redirects', '0-3|rank:0-3,…', 'redirect worker stdout (1), stderr (2) or both (3) to files (default 0)', true, 'r'),
  flag('tee', '0-3|rank:0-3,…', 'like --redirects, and still print to the console (default 0)', true, 't'),
  flag('local-ranks-filter', 'ranks', 'only show console output of these local ranks, e.g. 0,1'),
  flag('duplicate-stdout-filters', 'a,b,…', 'teed stdout lines containing any of these (",," for a comma) are copied to <log-dir>/<run id>/attempt_<n>/filtered_stdout.log'),
  flag('duplicate-stderr-filters', 'a,b,…', 'the same for stderr, into filtered_stderr.log'),
  flag('node-rank', 'n', 'accepted and ignored: group ranks are assigned at each rendezvous'),
  flag('master-addr', 'addr', 'accepted and ignored: the job workflow picks MASTER_ADDR'),
  flag('master-port', 'port', 'accepted and ignored: the job workflow picks MASTER_PORT'),
  flag('local-addr', 'addr', 'address other nodes reach this one at (default: this host\'s name)'),
  flag('logs-specs', 'name', 'accepted for compatibility and ignored', false),
  flag('numa-binding', 'mode', 'node, socket, exclusive or core-complex: bind local rank N to the CPUs near GPU N, as torchrun (numactl, else taskset); said once and skipped where it changes nothing (node or socket on one NUMA node)', false),
  flag('signals-to-handle', 'signals', 'signals that stop the workers with that same signal, SIGKILL after --shutdown-timeout (default SIGTERM,SIGINT,SIGHUP,SIGQUIT)'),
  flag('virtual-local-rank', undefined, 'every worker gets LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES narrowed to its own device'),
];

/** telastic's own flags (no PET_* variables: torchrun does not have them). */
export const TELASTIC_FLAGS: readonly RunFlag[] = [
  flag('shutdown-timeout', 'seconds', 'grace between SIGTERM and SIGKILL when workers stop (default 30)', false),
  flag('node-id', 'id', 'this node\'s id (default: hostname-pid)', false),
  flag('no-coordinator', undefined, 'do not host job workflows on this node (a controller does)', false),
  flag('checkpoint-dir', 'dir', 'directory shared by all nodes; TELASTIC_CHECKPOINT_DIR for workers', false),
  flag('keep-checkpoints', 'n', 'keep only the newest N checkpoints', false),
  flag('max-restarts-without-progress', 'k', `with --checkpoint-dir: K failure restarts in a row that resume from the same checkpoint end the job with exit code 3, do not requeue; 0: never (default 3)`, false),
  flag('progress-timeout', 'duration', 'a node none of whose ranks reported progress (TELASTIC_PROGRESS_FILE) for this long while its workers run is hung: its workers are killed and the job restarts (default: off)', false),
  flag('progress-start-timeout', 'duration', 'with --progress-timeout: how long the workers may run before their first report (import, init, loading a checkpoint; default: --progress-timeout)', false),
  flag('checkpoint-signal', 'signal', 'what the job\'s workers get when a drain or SIGTERM asks for a checkpoint first (default SIGUSR1)', false),
  flag('leave-grace', 'duration', 'on SIGTERM (a preemption notice), how long the job may take to checkpoint before this node leaves; 0 leaves at once; a second SIGTERM leaves at once (default 25s)', false),
  flag('health-check', 'cmd', 'shell command run before this node is given a rank, every round; non-zero exit keeps the node out, its last stderr line the reason (env TELASTIC_HEALTH_CHECK)', false),
  flag('health-check-timeout', 'seconds', 'a health check running longer fails (env TELASTIC_HEALTH_CHECK_TIMEOUT, default 30)', false),
  flag('task-queue', 'name', 'the control task queue (default "telastic")', false),
  flag('metrics-port', 'port', 'serve /metrics (Prometheus), /healthz and /readyz on this port (env TELASTIC_METRICS_PORT; default: none)', false),
  flag('metrics-host', 'host', 'address the metrics port binds (env TELASTIC_METRICS_HOST, default 0.0.0.0)', false),
];

/** The `PET_*` variable torchrun reads for a flag: `PET_` + its first long name, upper-cased. */
export const petName = (f: RunFlag): string => `PET_${f.name.replace(/-/g, '_').toUpperCase()}`;

function toOption(f: RunFlag): Option {
  const long = `--${f.name}`;
  const alias = f.name.includes('-') ? `--${f.name.replace(/-/g, '_')}, ` : '';
  const short = f.short ? `-${f.short}, ` : '';
  const help = f.pet ? `${f.help} [${petName(f)}]` : f.help;
  return new Option(`${short}${alias}${long}${f.arg ? ` <${f.arg}>` : ''}`, help);
}

/**
 * A fresh commander Command for `telastic run`: options stop at SCRIPT, which is followed by
 * the script's own arguments, untouched. Commander never exits or prints here.
 */
export function createRunCommand(): Command {
  const cmd = new Command('run')
    .usage('[options] SCRIPT [ARGS…]')
    .description('torchrun, with the rendezvous and restarts in a Temporal workflow')
    .argument('<script>', 'the training script (or module with -m, or program with --no-python)')
    .argument('[args...]', 'the script\'s arguments, passed through untouched')
    .passThroughOptions()
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  for (const f of [...TORCHRUN_FLAGS, ...TELASTIC_FLAGS]) cmd.addOption(toOption(f));
  return addConnectionOptions(cmd);
}
