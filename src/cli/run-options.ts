/**
 * `telastic run [options] SCRIPT [ARGS…]`: torchrun's command line, compiled to `RunOptions`.
 * Precedence for every torchrun flag: the flag, else its `PET_*` variable, else torchrun's
 * default. The endpoint falls back further to TEMPORAL_ADDRESS. Bad input is a `UsageError`.
 */
import { randomUUID } from 'node:crypto';
import * as os from 'node:os';
import { z } from 'zod';
import { describeZodError } from '../job/spec';
import { apiKeyFlagWarning, compileConnectionOptions, flagOrEnv } from './connection-options';
import { UsageError } from './errors';
import { compileMetricsOptions } from './metrics-options';
import { compileRdzvConf } from './rdzv-conf';
import { splitRunArgv } from './run-argv';
import { RUN_USAGE } from './run-command';
import { nodeIdSchema, rdzvIdSchema, runOptionsSchema, type RunOptions } from './run-schema';
import * as v from '../config/values';
import { DEFAULT_HEALTH_CHECK_TIMEOUT_MS, type HealthCheck } from '../agent/health-check';

export { runOptionsSchema, type RunOptions } from './run-schema';

/** What the defaults depend on; injectable for tests. */
export interface RunSystemInfo {
  cpuCount: number;
  hostname: string;
  pid: number;
  randomId: () => string;
}

export const systemInfo = (): RunSystemInfo => ({
  cpuCount: os.cpus().length,
  hostname: os.hostname(),
  pid: process.pid,
  randomId: randomUUID,
});

/** `${hostname}-${pid}`, reduced to the characters a node id may hold. */
export function defaultNodeId(sys: Pick<RunSystemInfo, 'hostname' | 'pid'>): string {
  const host = sys.hostname.replace(/[^A-Za-z0-9._:@-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return `${host || 'node'}-${sys.pid}`;
}

const BACKEND_HINT =
  'telastic rendezvous runs on Temporal; drop --rdzv-backend or use --rdzv-backend temporal ' +
  'and point --rdzv-endpoint at the Temporal frontend';
const START_METHODS = z.enum(['spawn', 'fork', 'forkserver'], {
  errorMap: () => ({ message: 'expected spawn, fork or forkserver' }),
});
const IGNORED: Record<string, string> = {
  'node-rank': 'group ranks are assigned by the job workflow at each rendezvous',
  'master-addr': 'the job workflow sets MASTER_ADDR to group rank 0\'s address',
  'master-port': 'the job workflow sets MASTER_PORT to a port group rank 0 reserved',
  'start-method': 'workers are always spawned as separate processes',
  'logs-specs': 'worker logs follow --log-dir, --redirects and --tee',
};

/** `--leave-grace`: a duration (`25s`, `1m`) or 0 for none. */
function leaveGrace(raw: v.RawValue | undefined): number {
  if (raw === undefined) return DEFAULT_LEAVE_GRACE_MS;
  if (/^\s*0+(\.0*)?\s*(s|ms|m)?\s*$/.test(raw.raw)) return 0;
  return v.parseValue(v.durationToMs, raw);
}

export const DEFAULT_LEAVE_GRACE_MS = 25_000;
/** torchrun's `--signals-to-handle` default. */
export const DEFAULT_SIGNALS_TO_HANDLE: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'];

/**
 * `--health-check CMD` (else TELASTIC_HEALTH_CHECK) and `--health-check-timeout SECONDS` (else
 * TELASTIC_HEALTH_CHECK_TIMEOUT, default 30): the agent's own, for `telastic run` and `telastic agent`.
 */
export function compileHealthCheck(flag: v.RawValue | undefined, timeoutFlag: v.RawValue | undefined, env: NodeJS.ProcessEnv): HealthCheck | undefined {
  const fromEnv = (name: string): v.RawValue | undefined => (env[name] ? { raw: env[name], from: name } : undefined);
  const command = flag ?? fromEnv('TELASTIC_HEALTH_CHECK');
  const timeout = timeoutFlag ?? fromEnv('TELASTIC_HEALTH_CHECK_TIMEOUT');
  const timeoutMs = timeout ? v.parseValue(v.secondsToMs('positive'), timeout) : DEFAULT_HEALTH_CHECK_TIMEOUT_MS;
  if (!command) return undefined;
  return { command: v.parseValue(v.nonEmpty, command), timeoutMs };
}

/** Parse `telastic run` argv (the words after `run`) and the environment into `RunOptions`. */
export function parseRunArgs(argv: string[], env: NodeJS.ProcessEnv, sys = systemInfo()): RunOptions {
  const a = splitRunArgv(argv, env);
  const notes: string[] = [];
  const opt = <T extends z.ZodTypeAny>(schema: T, name: string): z.output<T> | undefined => {
    const raw = a.value(name);
    return raw === undefined ? undefined : v.parseValue(schema, raw);
  };

  const runPath = a.switch('run-path');
  if (runPath) {
    const problem = 'not supported; telastic runs each worker as its own process (drop it)';
    throw new UsageError(`${runPath.from}: ${problem}`, runPath.from);
  }
  if (a.script === undefined) throw new UsageError(`missing SCRIPT: ${RUN_USAGE}`, 'SCRIPT');
  const module = a.switch('module') !== undefined;
  const noPython = a.switch('no-python') !== undefined;
  if (module && noPython) {
    throw new UsageError('--module (-m) and --no-python cannot be used together', '--module');
  }

  const nodes = opt(v.nnodesSchema, 'nnodes') ?? { minNodes: 1, maxNodes: 1 };
  const nprocPerNode = opt(v.nprocSchema(sys.cpuCount), 'nproc-per-node') ?? 1;
  const standalone = a.switch('standalone') !== undefined;
  const addressFlag = flagOrEnv(a.connection.address, '--address', {});
  let address = addressFlag ?? flagOrEnv(undefined, '', env, 'TEMPORAL_ADDRESS');
  let rdzvId = 'none';
  if (standalone) {
    // As torchrun does: --standalone picks its own backend, endpoint and a fresh run id.
    const ignored = ['rdzv-backend', 'rdzv-endpoint', 'rdzv-id'].map((n) => a.value(n)?.from);
    const named = ignored.filter((from) => from !== undefined);
    if (named.length) notes.push(`${named.join(', ')} ignored with --standalone`);
    rdzvId = sys.randomId();
  } else {
    const backend = a.value('rdzv-backend');
    if (backend && backend.raw !== 'temporal') throw v.usage(backend, BACKEND_HINT);
    rdzvId = opt(v.nonEmpty.pipe(rdzvIdSchema), 'rdzv-id') ?? rdzvId;
    // Flags beat variables: --address | --rdzv-endpoint, then PET_RDZV_ENDPOINT, TEMPORAL_ADDRESS.
    const endpoint = a.value('rdzv-endpoint');
    if (addressFlag && endpoint && a.given('rdzv-endpoint') && endpoint.raw !== addressFlag.raw) {
      throw v.usage(endpoint, `conflicts with --address ${addressFlag.raw}; give one of them`);
    }
    address = addressFlag ?? endpoint ?? address;
  }
  const conf = compileRdzvConf(a.value('rdzv-conf'));
  notes.push(...conf.notes);
  opt(START_METHODS, 'start-method');
  opt(v.intAtLeast(0), 'node-rank');
  opt(v.intAtLeast(0), 'master-port');
  for (const [name, why] of Object.entries(IGNORED)) {
    const raw = a.value(name);
    if (raw) notes.push(`${raw.from} ${raw.raw} ignored: ${why}`);
  }
  const eventLogHandler = opt(v.eventLogHandlerSchema, 'event-log-handler') ?? 'null';
  const logDir = opt(v.nonEmpty, 'log-dir');
  const duplicate = (name: string): string[] => {
    const filters = opt(v.commaListSchema, name) ?? [];
    // torchrun writes them beside its worker logs, in a temporary directory without --log-dir.
    if (filters.length > 0 && logDir === undefined) throw v.usage(a.value(name)!, 'needs --log-dir (the lines go to <log-dir>/<run id>/attempt_<n>/filtered_*.log)');
    return filters;
  };
  const virtualLocalRank = a.switch('virtual-local-rank') !== undefined;
  const visible = env.CUDA_VISIBLE_DEVICES;
  if (virtualLocalRank && visible !== undefined && nprocPerNode > visible.split(',').length) {
    const from = a.switch('virtual-local-rank')!.from;
    throw new UsageError(`${from}: local rank ${visible.split(',').length} exceeds the devices in CUDA_VISIBLE_DEVICES=${visible} (--nproc-per-node ${nprocPerNode})`, from);
  }
  const connection = compileConnectionOptions(a.connection, env, address);
  const keyWarning = apiKeyFlagWarning(a.connection);
  if (keyWarning) notes.push(keyWarning.replace(/^warning: /, ''));

  const compiled = runOptionsSchema.safeParse({
    ...nodes,
    nprocPerNode,
    rdzvId,
    address: connection.address,
    namespace: connection.namespace,
    taskQueue: opt(v.nonEmpty, 'task-queue') ?? 'telastic',
    rdzv: conf.rdzv,
    standalone,
    maxRestarts: opt(v.intAtLeast(0), 'max-restarts') ?? 0,
    monitorIntervalMs: opt(v.secondsToMs('positive'), 'monitor-interval') ?? 100,
    role: opt(v.nonEmpty, 'role') ?? 'default',
    entrypoint: { script: a.script, args: a.args, module, noPython },
    logDir,
    duplicateStdoutFilters: duplicate('duplicate-stdout-filters'),
    duplicateStderrFilters: duplicate('duplicate-stderr-filters'),
    signalsToHandle: opt(v.signalListSchema, 'signals-to-handle') ?? DEFAULT_SIGNALS_TO_HANDLE,
    virtualLocalRank,
    numaBinding: opt(v.numaModeSchema, 'numa-binding'),
    eventLogHandler,
    redirects: opt(v.stdSpecSchema, 'redirects') ?? '0',
    tee: opt(v.stdSpecSchema, 'tee') ?? '0',
    localRanksFilter: opt(v.localRanksSchema, 'local-ranks-filter'),
    localAddr: opt(v.nonEmpty, 'local-addr'),
    shutdownTimeoutMs: opt(v.secondsToMs('nonnegative'), 'shutdown-timeout') ?? 30_000,
    nodeId: opt(v.nonEmpty.pipe(nodeIdSchema), 'node-id') ?? defaultNodeId(sys),
    coordinator: !a.given('no-coordinator'),
    checkpointDir: opt(v.nonEmpty, 'checkpoint-dir'),
    keepCheckpoints: opt(v.intAtLeast(1), 'keep-checkpoints'),
    maxRestartsWithoutProgress: opt(v.intAtLeast(0), 'max-restarts-without-progress'),
    progressTimeoutMs: opt(v.durationToMs, 'progress-timeout'),
    progressStartTimeoutMs: opt(v.durationToMs, 'progress-start-timeout'),
    checkpointSignal: opt(v.catchableSignalSchema, 'checkpoint-signal') ?? 'SIGUSR1',
    leaveGraceMs: leaveGrace(a.value('leave-grace')),
    healthCheck: compileHealthCheck(a.value('health-check'), a.value('health-check-timeout'), env),
    connection,
    notes,
  });
  if (!compiled.success) throw new UsageError(describeZodError(compiled.error, 'telastic run: '), 'run');
  const metrics = compileMetricsOptions({ metricsPort: a.value('metrics-port')?.raw, metricsHost: a.value('metrics-host')?.raw }, env);
  return { ...compiled.data, metrics };
}
