/**
 * `telastic agent --pool NAME [options]`: a long-lived node daemon that registers with a pool
 * and runs whatever job the pool grants it, within its `--allow` paths and `--allow-env`
 * patterns (src/agent/allow.ts). This module compiles argv to `AgentCliOptions`; bad input is a
 * one-line `UsageError` naming the flag. Connection flags are every command's (TEMPORAL_* too).
 */
import * as path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { z } from 'zod';
import { addConnectionOptions, apiKeyFlagWarning, compileConnectionOptions, type ConnectionFlagValues, type ConnectionOptions } from './connection-options';
import { HelpRequested, UsageError } from './errors';
import { addMetricsOptions, compileMetricsOptions, type MetricsFlagValues, type MetricsOptions } from './metrics-options';
import { compileHealthCheck, defaultNodeId, systemInfo, type RunSystemInfo } from './run-options';
import type { HealthCheck } from '../agent/health-check';

const withHealthCheck = (healthCheck: HealthCheck | undefined) => (healthCheck ? { healthCheck } : {});
import { nodeIdSchema, rdzvIdSchema } from './run-schema';
import { ENV_NAME } from '../agent/env-rules';
import { catchableSignalSchema, nonEmpty, nprocSchema, parseValue, secondsToMs } from '../config/values';

export interface AgentCliOptions {
  /** `--pool`: the pool this agent serves (job-id rules). Required. */
  pool: string;
  /** @default `${hostname}-${pid}` */
  nodeId: string;
  /** The address other nodes reach this one at; absent means this host's name. */
  localAddr?: string;
  /** `--nproc N|cpu|auto`: worker slots on this node. @default this machine's CPU count */
  nproc: number;
  /** `--labels k=v,…`, for the pool to match jobs to nodes. @default {} */
  labels: Record<string, string>;
  /** `--allow`: paths a submitted script may lie under, absolute (not yet resolved). @default [] */
  allow: string[];
  /** `--allow-file`: scripts allowed exactly, absolute (not yet resolved). @default [] */
  allowFiles: string[];
  /** `--allow-env`: glob patterns of the variable names a submission may set. @default [] */
  allowEnv: string[];
  /** `--pass-env`: agent-only variables of its own (TEMPORAL_*, TELASTIC_*) its workers keep. @default [] */
  passEnv: string[];
  /** One-line warnings for the operator (an API key on the command line). */
  warnings: string[];
  /** `--coordinator`: also host job and pool workflows. @default false */
  coordinator: boolean;
  /** @default "telastic" */
  taskQueue: string;
  /** SIGTERM-to-SIGKILL grace when workers stop. @default 30000 */
  shutdownTimeoutMs: number;
  /** How long the pool waits for this agent's heartbeat before counting it lost. @default 10000 */
  heartbeatTimeoutMs: number;
  /** What this node's workers get when a job asks for a checkpoint (a checkpoint-first drain). @default SIGUSR1 */
  checkpointSignal: NodeJS.Signals;
  /** `--health-check CMD` / TELASTIC_HEALTH_CHECK, with `--health-check-timeout`: the operator's, never a submitter's. */
  healthCheck?: HealthCheck;
  connection: ConnectionOptions;
  /** `--metrics-port`, `--metrics-host` (src/cli/metrics-options.ts); null without a port. */
  metrics: MetricsOptions | null;
}

interface AgentFlagValues extends ConnectionFlagValues, MetricsFlagValues {
  pool?: string;
  nodeId?: string;
  localAddr?: string;
  nproc?: string;
  labels?: string;
  allow?: string[];
  allowFile?: string[];
  allowEnv?: string[];
  passEnv?: string[];
  coordinator?: boolean;
  taskQueue?: string;
  shutdownTimeout?: string;
  heartbeatTimeout?: string;
  checkpointSignal?: string;
  healthCheck?: string;
  healthCheckTimeout?: string;
}

const LABEL_PART = /^[A-Za-z0-9._/-]+$/;
const ENV_PATTERN = /^[A-Za-z0-9_*?[\]!^-]+$/;

const labelsSchema = z.string().transform((s, ctx) => {
  const labels: Record<string, string> = {};
  for (const item of s.split(',').filter((x) => x.trim() !== '')) {
    const [key = '', value = '', extra] = item.trim().split('=');
    const problem = extra !== undefined || !LABEL_PART.test(key) || !LABEL_PART.test(value)
      ? `${JSON.stringify(item)} is not key=value (letters, digits and . _ - / only)`
      : key in labels ? `label ${key} given twice` : undefined;
    if (problem) {
      ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }
    labels[key] = value;
  }
  return labels;
});

const envNamesSchema = z.string().transform((s, ctx) => {
  const names = s.split(',').map((p) => p.trim());
  const bad = names.find((p) => !ENV_NAME.test(p));
  if (bad !== undefined) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(bad)} is not a variable name (exact names only: letters, digits and _)` });
    return z.NEVER;
  }
  return names;
});

const envPatternsSchema = z.string().transform((s, ctx) => {
  const patterns = s.split(',').map((p) => p.trim());
  const bad = patterns.find((p) => !ENV_PATTERN.test(p));
  if (bad !== undefined) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(bad)} is not a pattern of variable names (letters, digits, _ and * ? [ ])` });
    return z.NEVER;
  }
  return patterns;
});

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** A fresh commander Command for `telastic agent`; it never exits or prints. */
function createAgentCommand(): Command {
  const cmd = new Command('agent')
    .usage('--pool NAME [options]')
    .description('serve a pool: run the jobs it grants this node, within --allow and --allow-env')
    .addOption(new Option('--pool <name>', 'the pool to serve (required)'))
    .addOption(new Option('--node-id <id>', 'this node\'s id (default: hostname-pid)'))
    .addOption(new Option('--local-addr <addr>', 'address other nodes reach this one at (default: this host\'s name)'))
    .addOption(new Option('--nproc <N|cpu|auto>', 'worker slots on this node; cpu and auto mean one per CPU (default cpu)'))
    .addOption(new Option('--labels <k=v,…>', 'labels jobs can ask for, e.g. zone=a,gpu=none'))
    .addOption(new Option('--allow <path...>', 'run submitted scripts only under these paths; repeatable (default: none, so nothing runs)'))
    .addOption(new Option('--allow-file <path...>', 'run exactly these scripts (even a launcher inside a virtualenv); repeatable'))
    .addOption(new Option('--allow-env <pattern,…>', 'take submitted env names matching these globs; exact names are safer (library variables load code); repeatable').argParser(collect))
    .addOption(new Option('--pass-env <name,…>', 'let workers inherit these of the agent\'s own TEMPORAL_*/TELASTIC_* variables (exact names; default none); repeatable').argParser(collect))
    .addOption(new Option('--coordinator', 'also host job and pool workflows on this node'))
    .addOption(new Option('--task-queue <name>', 'the control task queue (default "telastic")'))
    .addOption(new Option('--shutdown-timeout <seconds>', 'grace between SIGTERM and SIGKILL when workers stop (default 30)'))
    .addOption(new Option('--heartbeat-timeout <seconds>', 'how long without a heartbeat before the pool counts this agent lost (default 10)'))
    .addOption(new Option('--checkpoint-signal <signal>', 'what the workers get when a drain asks for a checkpoint first (default SIGUSR1)'))
    .addOption(new Option('--health-check <cmd>', 'shell command run before this node is given a rank, every round; non-zero exit keeps it out, its last stderr line the reason (env TELASTIC_HEALTH_CHECK)'))
    .addOption(new Option('--health-check-timeout <seconds>', 'a health check running longer fails (env TELASTIC_HEALTH_CHECK_TIMEOUT, default 30)'))
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  return addMetricsOptions(addConnectionOptions(cmd));
}

function parseFlags(cmd: Command, argv: string[]): AgentFlagValues {
  let parsed;
  try {
    parsed = cmd.parseOptions([...argv]);
  } catch (err) {
    if (err instanceof CommanderError && err.code === 'commander.optionMissingArgument') {
      const flag = /'(-[^ ']+)/.exec(err.message)?.[1]?.split(', ').pop() ?? argv[argv.length - 1] ?? '';
      throw new UsageError(`${flag}: expected a value`, flag);
    }
    throw err;
  }
  const [unknown] = parsed.unknown;
  if (unknown === '-h' || unknown === '--help') throw new HelpRequested(cmd.helpInformation().replace(/^Usage: agent /, 'Usage: telastic agent '));
  if (unknown !== undefined) {
    const name = unknown.split('=')[0] ?? unknown;
    const isSwitch = cmd.options.some((o) => o.long === name && o.isBoolean());
    throw new UsageError(isSwitch ? `${unknown}: ${name} takes no value` : `unknown option ${unknown}`, name);
  }
  const [operand] = parsed.operands;
  if (operand !== undefined) throw new UsageError(`unexpected argument ${operand}: telastic agent takes no script (jobs come from telastic submit)`, operand);
  return cmd.opts<AgentFlagValues>();
}

/** Parse `telastic agent` argv (the words after `agent`) and the environment into `AgentCliOptions`. */
export function parseAgentArgs(argv: string[], env: NodeJS.ProcessEnv, sys: RunSystemInfo = systemInfo()): AgentCliOptions {
  const f = parseFlags(createAgentCommand(), argv);
  const opt = <T extends z.ZodTypeAny>(schema: T, raw: string | undefined, from: string): z.output<T> | undefined =>
    raw === undefined ? undefined : parseValue(schema, { raw, from });

  const pool = opt(nonEmpty.pipe(rdzvIdSchema), f.pool, '--pool');
  if (pool === undefined) throw new UsageError('missing --pool NAME: the pool this agent serves', '--pool');
  const allow = (f.allow ?? []).map((p) => path.resolve(opt(nonEmpty, p, '--allow')!));
  const allowFiles = (f.allowFile ?? []).map((p) => path.resolve(opt(nonEmpty, p, '--allow-file')!));
  return {
    pool,
    nodeId: opt(nonEmpty.pipe(nodeIdSchema), f.nodeId, '--node-id') ?? defaultNodeId(sys),
    ...(f.localAddr !== undefined && { localAddr: opt(nonEmpty, f.localAddr, '--local-addr') }),
    nproc: opt(nprocSchema(sys.cpuCount), f.nproc, '--nproc') ?? Math.max(1, sys.cpuCount),
    labels: opt(labelsSchema, f.labels, '--labels') ?? {},
    allow: [...new Set(allow)],
    allowFiles: [...new Set(allowFiles)],
    allowEnv: [...new Set((f.allowEnv ?? []).flatMap((raw) => opt(envPatternsSchema, raw, '--allow-env')!))],
    passEnv: [...new Set((f.passEnv ?? []).flatMap((raw) => opt(envNamesSchema, raw, '--pass-env')!))],
    warnings: [apiKeyFlagWarning(f)].filter((w): w is string => w !== null),
    coordinator: f.coordinator === true,
    taskQueue: opt(nonEmpty, f.taskQueue, '--task-queue') ?? 'telastic',
    shutdownTimeoutMs: opt(secondsToMs('nonnegative'), f.shutdownTimeout, '--shutdown-timeout') ?? 30_000,
    heartbeatTimeoutMs: opt(secondsToMs('positive'), f.heartbeatTimeout, '--heartbeat-timeout') ?? 10_000,
    checkpointSignal: opt(catchableSignalSchema, f.checkpointSignal, '--checkpoint-signal') ?? 'SIGUSR1',
    ...withHealthCheck(compileHealthCheck(
      f.healthCheck === undefined ? undefined : { raw: f.healthCheck, from: '--health-check' },
      f.healthCheckTimeout === undefined ? undefined : { raw: f.healthCheckTimeout, from: '--health-check-timeout' },
      env,
    )),
    connection: compileConnectionOptions(f, env),
    metrics: compileMetricsOptions(f, env),
  };
}
