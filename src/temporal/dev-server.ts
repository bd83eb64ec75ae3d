/**
 * Runs the `temporal server start-dev` process: the real Temporal server (SQLite or in-memory)
 * that `telastic dev`, `telastic run --standalone` and the test suite use.
 *
 * The server is started with telastic's search attributes registered (unless told not to) and the version check off
 * (no network here). It is spawned under `setpriv --pdeathsig TERM` where util-linux has it, so
 * it dies with its parent even when the parent is SIGKILLed, and in its own process group, so a
 * terminal's Ctrl-C reaches only the parent, which stops its workers before the server.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { resolveTemporalCli } from './binary';
import { DevServerStartError } from './errors';
import { freePort, isListening } from './ports';
import { hasSearchAttributes } from './readiness';
import { searchAttributeFlags } from './search-attributes';

export { hasSearchAttributes } from './readiness';

export interface DevServerOptions {
  /** Frontend gRPC port; 0 picks a free port on `ip`. @default 0 */
  port?: number;
  /** Web UI port (ignored when headless); 0 or unset picks a free port. */
  uiPort?: number;
  /** No Web UI. @default false */
  headless?: boolean;
  /** SQLite file that keeps everything across restarts. @default undefined (in-memory) */
  dbFile?: string;
  /** Namespace to create at launch and to wait for ("default" always exists). @default 'default' */
  namespace?: string;
  /** Address the frontend and the UI bind to. @default '127.0.0.1' */
  ip?: string;
  /** Server log level: debug, info, warn, error, never. @default 'warn' */
  logLevel?: string;
  /** Path of the `temporal` CLI. @default resolveTemporalCli() (installs it if missing) */
  cli?: string;
  /** How long the server may take to answer. @default 60_000 (a loaded 2-core machine needs it) */
  startTimeoutMs?: number;
  /** The Web UI's codec endpoint (`--ui-codec-endpoint`): a codec server that decodes sealed payloads. */
  uiCodecEndpoint?: string;
  /** Each line the server writes to stderr (its log). */
  onLog?: (line: string) => void;
  /**
   * Dynamic config overrides (`--dynamic-config-value KEY=VALUE`), e.g. Temporal's per-execution
   * limits lowered far below a job's size to show the job stays inside them.
   */
  dynamicConfig?: Record<string, string | number | boolean>;
  /**
   * Register telastic's search attributes at start (and wait for them). false: a bare server,
   * like a production cluster before `telastic setup`. @default true
   */
  searchAttributes?: boolean;
}

export interface DevServer {
  /** `host:port` of the gRPC frontend, for `Connection.connect({address})`. */
  readonly address: string;
  /** `http://host:port` of the Web UI; undefined when headless. */
  readonly uiUrl?: string;
  readonly pid: number;
  /** The exact argv the server was started with (after setpriv, if any). */
  readonly command: readonly string[];
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. */
  stop(): Promise<void>;
  kill(signal: NodeJS.Signals): void;
  /** Exit code, or null when ended by a signal. */
  readonly exited: Promise<number | null>;
}

type Ending = { code: number | null; signal: NodeJS.Signals | null } | { spawnError: Error };

const SETPRIV = '/usr/bin/setpriv';
const STOP_GRACE_MS = 10_000;
const TAIL_LINES = 40;

/**
 * The dynamic config every server telastic starts has (docs/production.md, "Large jobs", says the
 * same for a cluster). One partition per task queue: a node queue has one agent polling it with
 * two pollers; with the default 4, 256 simulated nodes left most prepares after a round boundary
 * unanswered within prepare_timeout in 2 of 4 runs, with 1 in 1 of 7 (docs/scale.md).
 */
export const SERVER_DEFAULTS: Record<string, string | number | boolean> = {
  'frontend.enableServerVersionCheck': false,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
};

/** Starts a dev server and resolves once it answers gRPC calls with the namespace and search attributes in place. */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const cli = opts.cli ?? (await resolveTemporalCli());
  const autoPorts = !opts.port || (!opts.headless && !opts.uiPort);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(cli, opts);
    } catch (err) {
      // A port picked by freePort() can be taken before the server binds it: pick again.
      const raced = err instanceof DevServerStartError && /address already in use/.test(err.stderrTail);
      if (!(raced && autoPorts && attempt < 3)) throw err;
    }
  }
}

async function startOnce(cli: string, opts: DevServerOptions): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const namespace = opts.namespace ?? 'default';
  const port = opts.port || (await freePort(ip));
  const uiPort = opts.headless ? undefined : opts.uiPort || (await freePort(ip));
  const address = `${ip}:${port}`;
  const args = [
    'server', 'start-dev', '--ip', ip, '--port', String(port),
    ...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]),
    ...(uiPort !== undefined && opts.uiCodecEndpoint ? ['--ui-codec-endpoint', opts.uiCodecEndpoint] : []),
    ...(opts.dbFile ? ['--db-filename', opts.dbFile] : []),
    '--namespace', namespace, '--log-level', opts.logLevel ?? 'warn',
    ...Object.entries({ ...SERVER_DEFAULTS, ...opts.dynamicConfig }).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${JSON.stringify(v)}`]),
    ...(opts.searchAttributes === false ? [] : searchAttributeFlags()),
  ];
  const withPdeathsig = existsSync(SETPRIV);
  const command = withPdeathsig ? [SETPRIV, '--pdeathsig', 'TERM', '--', cli, ...args] : [cli, ...args];
  // Umask 077: the database holds every history (plain without a key), for this user only.
  // Set around the spawn only, which forks at once (a file libuv's threads create meanwhile
  // would come out 0600 rather than 0644: stricter, never looser).
  const umask = process.umask(0o077);
  let child;
  try {
    child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: withPdeathsig });
  } finally {
    process.umask(umask);
  }

  const tail: string[] = [];
  let partial = '';
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      opts.onLog?.(line);
    }
  });
  const state: { end?: Ending } = {};
  // 'close' rather than 'exit': the stderr tail is complete by then.
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (spawnError) => { state.end ??= { spawnError }; resolve(null); });
    child.once('close', (code, signal) => { state.end ??= { code, signal }; resolve(code); });
  });
  const stderrTail = () => [...tail, partial].join('\n').trim();

  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  const conn = Connection.lazy({ address, connectTimeout: 2_000 });
  try {
    for (;;) {
      const end = state.end;
      if (end) {
        const how = 'spawnError' in end ? end.spawnError.message : end.signal ? `signal ${end.signal}` : `code ${end.code}`;
        const last = stderrTail().split('\n').pop() ?? '';
        throw new DevServerStartError(
          `temporal dev server exited before answering (${how})${last ? `: ${last}` : ''}`, address,
          'code' in end ? end.code : null, 'signal' in end ? end.signal : null, false, stderrTail());
      }
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new DevServerStartError(
          `temporal dev server did not answer on ${address} within ${opts.startTimeoutMs ?? 60_000} ms`,
          address, null, null, true, stderrTail());
      }
      if ((await isListening(ip, port)) && (await answers(conn, namespace, opts.searchAttributes !== false))) break;
      await sleep(200);
    }
  } finally {
    await conn.close().catch(() => undefined);
  }

  const kill = (signal: NodeJS.Signals) => { if (!state.end) child.kill(signal); };
  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${ip}:${uiPort}`,
    pid: child.pid as number,
    command,
    exited,
    kill,
    async stop() {
      if (state.end) return;
      kill('SIGTERM');
      const timer = setTimeout(() => kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** True once the frontend serves the namespace (with telastic's search attributes registered, when `withAttributes`). */
async function answers(conn: Connection, namespace: string, withAttributes: boolean): Promise<boolean> {
  try {
    await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
    await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.describeNamespace({ namespace }));
  } catch {
    return false;
  }
  return !withAttributes || hasSearchAttributes(conn, namespace);
}
