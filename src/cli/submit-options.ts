/**
 * `telastic submit --pool NAME [job flags] SCRIPT [ARGS…]`: hand a job to a pool's agents.
 * The job flags are `telastic run`'s, with the same names, meanings and `PET_*` variables, and
 * are read by its parser: this module only takes out the submit-only flags (`--pool`, `--env`,
 * `--wait`) before SCRIPT and refuses the flags that belong to a node, which pool agents take.
 */
import * as path from 'node:path';
import type { Option } from 'commander';
import type { Entrypoint, RdzvTiming } from '../job/spec';
import type { ConnectionOptions } from './connection-options';
import { HelpRequested, UsageError } from './errors';
import { splitRunArgv } from './run-argv';
import { createRunCommand, petName, TORCHRUN_FLAGS } from './run-command';
import { parseRunArgs, systemInfo, type RunSystemInfo } from './run-options';
import { rdzvIdSchema } from './run-schema';
import { nonEmpty, parseValue, usage } from '../config/values';

export interface SubmitOptions {
  spec: {
    jobId: string;
    pool: string;
    /** `--env K=V`: what the submitter asks the agents to add to the workers' environment. */
    env: Record<string, string>;
    minNodes: number;
    maxNodes: number;
    nprocPerNode: number;
    maxRestarts: number;
    role: string;
    entrypoint: Entrypoint;
    rdzv: RdzvTiming;
    shutdownTimeoutMs: number;
    checkpointDir?: string;
    keepCheckpoints?: number;
    maxRestartsWithoutProgress?: number;
    progressTimeoutMs?: number;
    progressStartTimeoutMs?: number;
  };
  /** `--wait`: stay until the job ends. */
  wait: boolean;
  connection: ConnectionOptions;
  taskQueue: string;
  /** One line per accepted-but-ignored input. */
  notes: string[];
}

export const SUBMIT_USAGE = [
  'Usage: telastic submit --pool NAME [options] SCRIPT [ARGS…]',
  '',
  'Hand a job to the agents of pool NAME (started with telastic agent --pool NAME).',
  '',
  '  --pool <name>      the pool whose agents run the job (required)',
  '  --env <K=V>        add K=V to the workers\' environment; repeatable (agents take only names their --allow-env matches)',
  '  --wait             wait until the job ends',
  '',
  'Job flags, as telastic run takes them (and their PET_* variables): --nnodes, --nproc-per-node N,',
  '--rdzv-id (default: job-<8 hex>), --rdzv-conf, --max-restarts, --role, -m/--module, --no-python,',
  '--shutdown-timeout, --checkpoint-dir, --keep-checkpoints, --task-queue; connection flags: --address,',
  '-n/--namespace, --api-key, --tls, --tls-*, --encryption-key-file, --accept-unsealed. See telastic run --help.',
].join('\n');

/** `telastic run` flags that belong to a node: a pool job takes them from its agents. */
const NODE_FLAGS: Record<string, string> = {
  standalone: 'not for a pool: it starts a one-machine job with its own server; use telastic run --standalone',
  'local-addr': 'a node\'s flag; give it to telastic agent',
  'node-id': 'a node\'s flag; give it to telastic agent',
  'no-coordinator': 'a node\'s flag; telastic agent hosts no job workflows unless given --coordinator',
  'log-dir': 'a node\'s flag; give it to telastic agent',
  redirects: 'a node\'s flag; give it to telastic agent',
  tee: 'a node\'s flag; give it to telastic agent',
  'local-ranks-filter': 'a node\'s flag; give it to telastic agent',
};
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface Taken {
  pool?: string;
  env: Record<string, string>;
  wait: boolean;
  /** The words left for `telastic run`'s parser. */
  rest: string[];
}

/** How many words an option word uses (1 or 2), refusing a node's flag; commander's reading. */
function optionWords(options: readonly Option[], word: string): 1 | 2 {
  const short = /^-[^-]/.test(word);
  const name = short ? word.slice(0, 2) : (word.split('=')[0] ?? word);
  const o = options.find((x) => x.long === name || x.short === name);
  if (!o) return 1; // unknown: telastic run's parser names it
  const long = o.long?.slice(2) ?? '';
  if (NODE_FLAGS[long]) throw new UsageError(`${name}: ${NODE_FLAGS[long]}`, `--${long}`);
  if (!o.required && !o.optional) {
    // A switch; `-mX` is `-m -X`, so the rest of the word is read the same way.
    return short && word.length > 2 ? optionWords(options, `-${word.slice(2)}`) : 1;
  }
  return word.includes('=') && !short ? 1 : short && word.length > 2 ? 1 : 2;
}

/** Take `--pool`, `--env` and `--wait` out of the words before SCRIPT; leave the rest in order. */
function takeSubmitFlags(argv: string[]): Taken {
  const options = createRunCommand().options;
  const taken: Taken = { env: {}, wait: false, rest: [] };
  let i = 0;
  const valueOf = (word: string, name: string): string => {
    if (word.startsWith(`${name}=`)) return word.slice(name.length + 1);
    const next = argv[++i];
    if (next === undefined) throw new UsageError(`${name}: expected a value`, name);
    return next;
  };
  for (; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--' || !word.startsWith('-') || word === '-') break; // SCRIPT (or `--` before it)
    if (word === '-h' || word === '--help') throw new HelpRequested(SUBMIT_USAGE);
    if (word === '--wait') {
      taken.wait = true;
    } else if (word.startsWith('--wait=')) {
      throw new UsageError(`${word}: --wait takes no value`, '--wait', word.slice(7));
    } else if (word === '--pool' || word.startsWith('--pool=')) {
      taken.pool = parseValue(nonEmpty.pipe(rdzvIdSchema), { raw: valueOf(word, '--pool'), from: '--pool' });
    } else if (word === '--env' || word.startsWith('--env=')) {
      const raw = valueOf(word, '--env');
      const eq = raw.indexOf('=');
      if (eq < 0) throw usage({ raw, from: '--env' }, 'expected NAME=VALUE');
      if (!ENV_NAME.test(raw.slice(0, eq))) throw usage({ raw, from: '--env' }, 'NAME must be letters, digits and _, not starting with a digit');
      taken.env[raw.slice(0, eq)] = raw.slice(eq + 1);
    } else {
      const n = optionWords(options, word);
      taken.rest.push(...argv.slice(i, i + n));
      i += n - 1;
    }
  }
  taken.rest.push(...argv.slice(i));
  return taken;
}

/** The submitter's environment without the `PET_*` variables of a node's flags, each noted. */
function withoutNodeVariables(env: NodeJS.ProcessEnv, notes: string[]): NodeJS.ProcessEnv {
  const clean = { ...env };
  for (const f of TORCHRUN_FLAGS) {
    const name = petName(f);
    if (!NODE_FLAGS[f.name] || !f.pet || clean[name] === undefined) continue;
    if (clean[name] !== '') notes.push(`${name} ignored: a node's setting; give telastic agent the flag`);
    delete clean[name];
  }
  return clean;
}

/** Parse `telastic submit` argv (the words after `submit`) and the environment into `SubmitOptions`. */
export function parseSubmitArgs(argv: string[], env: NodeJS.ProcessEnv, sys: RunSystemInfo = systemInfo()): SubmitOptions {
  const taken = takeSubmitFlags(argv);
  const notes: string[] = [];
  const runEnv = withoutNodeVariables(env, notes);
  const split = splitRunArgv(taken.rest, runEnv);
  const nproc = split.value('nproc-per-node');
  if (nproc && ['cpu', 'auto'].includes(nproc.raw.trim())) {
    throw usage(nproc, 'would count this machine\'s CPUs, not the agents\'; give a number');
  }
  const monitor = split.value('monitor-interval');
  if (monitor) notes.push(`${monitor.from} ${monitor.raw} ignored: each agent watches its own workers`);
  if (taken.pool === undefined) throw new UsageError('missing --pool NAME: the pool whose agents run the job', '--pool');

  const run = parseRunArgs(taken.rest, runEnv, sys);
  const { entrypoint } = run;
  const hex = sys.randomId().replace(/[^0-9a-fA-F]/g, '').toLowerCase().slice(0, 8);
  return {
    spec: {
      jobId: run.rdzvId === 'none' ? `job-${hex}` : run.rdzvId,
      pool: taken.pool,
      env: taken.env,
      minNodes: run.minNodes,
      maxNodes: run.maxNodes,
      nprocPerNode: run.nprocPerNode,
      maxRestarts: run.maxRestarts,
      role: run.role,
      entrypoint: { ...entrypoint, script: entrypoint.module ? entrypoint.script : path.resolve(entrypoint.script) },
      rdzv: run.rdzv,
      shutdownTimeoutMs: run.shutdownTimeoutMs,
      ...(run.checkpointDir !== undefined && { checkpointDir: path.resolve(run.checkpointDir) }),
      ...(run.keepCheckpoints !== undefined && { keepCheckpoints: run.keepCheckpoints }),
      ...(run.maxRestartsWithoutProgress !== undefined && { maxRestartsWithoutProgress: run.maxRestartsWithoutProgress }),
      ...(run.progressTimeoutMs !== undefined && { progressTimeoutMs: run.progressTimeoutMs }),
      ...(run.progressStartTimeoutMs !== undefined && { progressStartTimeoutMs: run.progressStartTimeoutMs }),
    },
    wait: taken.wait,
    connection: run.connection,
    taskQueue: run.taskQueue,
    notes: [...notes, ...run.notes],
  };
}
