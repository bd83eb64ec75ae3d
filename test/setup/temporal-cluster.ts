/**
 * A real Temporal cluster for one test file, shaped as a platform team runs it: the server binary
 * built by scripts/setup-temporal-server.sh, PostgreSQL 15 (test/setup/postgres.ts) for
 * persistence and SQL visibility, and frontend, history, matching and the internal worker as
 * four separate processes that can be killed and started again one at a time on the same ports.
 *
 * What it does, in order: a throwaway PostgreSQL; the `temporal` and `temporal_visibility`
 * databases and their schemas with the schema tool (setup-schema -v 0.0, then update-schema to
 * the module's latest versioned schema); a config based on the module's
 * config/development-postgres12.yaml; the four services; then the namespace (the server creates
 * none, not even `default`) and telastic's search attributes with telastic's own `telastic setup`.
 *
 * Every port the server listens on is below 32768: it keeps membership ports in a PostgreSQL
 * smallint, and a port the OS would hand out (32768 and up here) kills it at start.
 * Each service's log is `<dir>/<service>.log` (appended across restarts), quoted when a start fails.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { runTelastic } from '../../test-support/agents';
import { startPostgres, type TestPostgres } from './postgres';

const run = promisify(execFile);

export const TEMPORAL_SERVER_VERSION = '1.32.2';
export type Service = 'frontend' | 'history' | 'matching' | 'worker';
/** In the order they are started (frontend first: the others find it through membership). */
export const SERVICES: readonly Service[] = ['frontend', 'history', 'matching', 'worker'];

/** The name each service gives its gRPC health status (service/<name>/ in the server's source). */
const HEALTH_NAME: Record<Service, string> = {
  frontend: 'temporal.api.workflowservice.v1.WorkflowService',
  history: 'temporal.api.workflowservice.v1.HistoryService',
  matching: 'temporal.api.workflowservice.v1.MatchingService',
  worker: 'temporal.api.workflowservice.v1.WorkerService',
};

export interface ClusterOptions {
  /** The namespace to create and set up for telastic. @default 'default' */
  namespace?: string;
  /** The server's log level. @default env TELASTIC_TEST_TEMPORAL_LOG_LEVEL, else 'warn' */
  logLevel?: string;
  /** How long a service may take to report SERVING. @default 90_000 */
  startTimeoutMs?: number;
}

export interface TemporalCluster {
  /** `127.0.0.1:PORT` of the frontend. */
  readonly address: string;
  readonly namespace: string;
  /** The PostgreSQL that holds everything (its `stop()`/`start()` are an outage of the store). */
  readonly postgres: TestPostgres;
  /** The running process of a service (its pid changes with every start). */
  pid(service: Service): number | undefined;
  /** Signals a service and resolves once its process is gone (SIGKILL unless told). */
  kill(service: Service, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a service (that is not running) on its ports again; resolves once it reports SERVING. */
  start(service: Service): Promise<void>;
  /** The last lines of a service's log. */
  logTail(service: Service, lines?: number): string;
  /** What `telastic setup` printed when the cluster came up. */
  readonly setupOutput: string;
  /** Stops every service and PostgreSQL and deletes the files. Safe to call more than once. */
  destroy(): Promise<void>;
}

/** The versioned cache the setup scripts build into (`$TELASTIC_CACHE_DIR`, else ~/.cache/telastic). */
export function cacheDir(): string {
  return process.env.TELASTIC_CACHE_DIR || path.join(os.homedir(), '.cache', 'telastic');
}

/** The versioned directory scripts/setup-temporal-server.sh builds (bin/, schema/, config/). */
export function temporalServerDir(): string {
  const dir = path.join(cacheDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  if (!existsSync(path.join(dir, '.complete'))) {
    throw new Error(`the Temporal server ${TEMPORAL_SERVER_VERSION} is not built in ${dir}: run scripts/setup.sh (or bash scripts/setup-temporal-server.sh)`);
  }
  return dir;
}

/**
 * Starts a cluster; on any failure what it started is stopped before the error is thrown.
 * The caller destroys it in afterAll.
 */
export async function startTemporalCluster(opts: ClusterOptions = {}): Promise<TemporalCluster> {
  const home = temporalServerDir();
  const namespace = opts.namespace ?? 'default';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-cluster-'));
  const procs = new Map<Service, ChildProcess>();
  const exits = new Map<Service, Promise<void>>();
  let postgres: TestPostgres | undefined;
  let destroyed = false;

  const destroy = async () => {
    if (destroyed) return;
    destroyed = true;
    await Promise.all([...procs.keys()].map((s) => killService(s, 'SIGKILL')));
    await postgres?.destroy();
    rmSync(dir, { recursive: true, force: true });
  };
  const killService = async (service: Service, signal: NodeJS.Signals = 'SIGKILL') => {
    const p = procs.get(service);
    if (!p) return;
    if (p.exitCode === null && p.signalCode === null) p.kill(signal);
    await exits.get(service);
    procs.delete(service);
  };
  const logFile = (s: Service) => path.join(dir, `${s}.log`);
  const logTail = (s: Service, lines = 30) => (existsSync(logFile(s)) ? readFileSync(logFile(s), 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '');

  try {
    postgres = await startPostgres();
    const pgPort = Number(new URL(postgres.url).port);
    await createSchemas(home, pgPort);
    const ports = await lowPorts(8);
    const rpc = Object.fromEntries(SERVICES.map((s, i) => [s, { grpc: ports[2 * i], membership: ports[2 * i + 1] }])) as Record<Service, { grpc: number; membership: number }>;
    const address = `127.0.0.1:${rpc.frontend.grpc}`;
    const dynamicConfig = path.join(dir, 'dynamicconfig.yaml');
    writeFileSync(dynamicConfig, DYNAMIC_CONFIG);
    const configFile = path.join(dir, 'temporal.yaml');
    writeFileSync(configFile, serverConfig({ pgPort, rpc, dynamicConfig, logLevel: opts.logLevel ?? process.env.TELASTIC_TEST_TEMPORAL_LOG_LEVEL ?? 'warn' }));

    const startService = async (service: Service) => {
      if (procs.has(service)) throw new Error(`temporal ${service} is running already`);
      const log = openSync(logFile(service), 'a');
      const argv = [path.join(home, 'bin', 'temporal-server'), '--config-file', configFile, '--allow-no-auth', 'start', '--service', service];
      // setpriv --pdeathsig: the service dies with the test process, even when that is SIGKILLed.
      const withSetpriv = existsSync('/usr/bin/setpriv');
      const cmd = withSetpriv ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL', '--', ...argv] : argv;
      let child: ChildProcess;
      try {
        child = spawn(cmd[0], cmd.slice(1), { cwd: home, stdio: ['ignore', log, log] });
      } finally {
        closeSync(log);
      }
      procs.set(service, child);
      exits.set(service, new Promise((resolve) => { child.once('exit', () => resolve()); child.once('error', () => resolve()); }));
      await waitServing(service, rpc[service].grpc, child, opts.startTimeoutMs ?? 90_000, () => logTail(service));
    };

    for (const s of SERVICES) await startService(s);
    const setupOutput = await prepareNamespace(address, namespace);
    return {
      address,
      namespace,
      postgres,
      setupOutput,
      pid: (s) => procs.get(s)?.pid,
      kill: killService,
      start: startService,
      logTail,
      destroy,
    };
  } catch (err) {
    const tails = SERVICES.filter((s) => existsSync(logFile(s))).map((s) => `--- ${s}.log:\n${logTail(s, 15)}`).join('\n');
    await destroy();
    throw tails ? new Error(`${(err as Error).message}\n${tails}`, { cause: err }) : err;
  }
}

const SQL_TOOL_DB = { temporal: 'temporal', visibility: 'temporal_visibility' } as const;

/** Both databases, at the module's latest schema version, as the schema tool's docs say. */
async function createSchemas(home: string, pgPort: number): Promise<void> {
  const tool = path.join(home, 'bin', 'temporal-sql-tool');
  for (const [schema, db] of Object.entries(SQL_TOOL_DB)) {
    const base = ['--plugin', 'postgres12', '--ep', '127.0.0.1', '-p', String(pgPort), '-u', 'postgres', '--db', db];
    const steps = [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '-d', path.join(home, 'schema', 'postgresql', 'v12', schema, 'versioned')]];
    for (const step of steps) {
      try {
        await run(tool, [...base, ...step], { timeout: 60_000 });
      } catch (err) {
        const e = err as { stderr?: string; stdout?: string; message: string };
        throw new Error(`temporal-sql-tool ${step[0]} (${db}): ${((e.stderr || e.stdout || '').trim().split('\n').pop()) ?? e.message}`);
      }
    }
  }
}

/**
 * Dynamic config: no version check (no internet here). Everything else is the server's default,
 * so the tests see what a production cluster does (e.g. search attribute and namespace caches
 * that refresh on their own schedule, which the dev server forces fresh on every read).
 */
// As deploy/compose/temporal-dynamic.yaml (and SERVER_DEFAULTS of the dev servers).
const DYNAMIC_CONFIG = `frontend.enableServerVersionCheck:
  - value: false
matching.numTaskqueueReadPartitions:
  - value: 1
matching.numTaskqueueWritePartitions:
  - value: 1
`;

function serverConfig(c: { pgPort: number; rpc: Record<Service, { grpc: number; membership: number }>; dynamicConfig: string; logLevel: string }): string {
  const store = (db: string, conns: number) => `      sql:
        pluginName: "postgres12"
        databaseName: "${db}"
        connectAddr: "127.0.0.1:${c.pgPort}"
        connectProtocol: "tcp"
        user: "postgres"
        password: ""
        maxConns: ${conns}
        maxIdleConns: ${conns}
        maxConnLifetime: "1h"`;
  const services = SERVICES.map((s) => `  ${s}:
    rpc:
      grpcPort: ${c.rpc[s].grpc}
      membershipPort: ${c.rpc[s].membership}
      bindOnLocalHost: true`).join('\n');
  // config/development-postgres12.yaml, with the test's ports and database, no metrics, pprof,
  // HTTP API or archival listeners, and the dynamic config above.
  return `log:
  stdout: true
  level: ${c.logLevel}

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
${store('temporal', 20)}
    postgres-visibility:
${store('temporal_visibility', 4)}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"

services:
${services}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${c.rpc.frontend.grpc}"

dcRedirectionPolicy:
  policy: "noop"

dynamicConfigClient:
  filepath: "${c.dynamicConfig}"
  pollInterval: "10s"
`;
}

/**
 * Until the service's gRPC health check says SERVING. History says so 5 s after it has acquired its
 * shards (service/history/service.go: "a few seconds for stabilization"); it serves them meanwhile.
 */
async function waitServing(service: Service, port: number, child: ChildProcess, timeoutMs: number, log: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // gRPC's reconnect backoff (1 s, growing 1.6 times per failed attempt) would have the check
  // notice a service that came up seconds late; retry the connection every 100-200 ms instead.
  const channelArgs = { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 200 };
  const conn = Connection.lazy({ address: `127.0.0.1:${port}`, connectTimeout: 2_000, channelArgs });
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`temporal ${service} exited at start (${child.signalCode ?? `code ${child.exitCode}`}): ${lastError(log())}`);
      }
      if (Date.now() > deadline) throw new Error(`temporal ${service} did not report SERVING on 127.0.0.1:${port} within ${timeoutMs / 1000} s`);
      const serving = await conn
        .withDeadline(Date.now() + 2_000, () => conn.healthService.check({ service: HEALTH_NAME[service] }))
        .then((r) => r.status === 1, () => false); // 1: SERVING
      if (serving) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/** The server's last error line (its log is JSON lines: the `msg`, and `error` when there is one). */
function lastError(log: string): string {
  const lines = log.split('\n').reverse();
  for (const line of lines) {
    try {
      const j = JSON.parse(line) as { level?: string; msg?: string; error?: string };
      if (j.level === 'error' || j.level === 'fatal') return `${j.msg}${j.error ? `: ${j.error}` : ''}`;
    } catch {
      if (line.trim()) return line.trim();
    }
  }
  return '(no log)';
}

/** The namespace (registered here: the server makes none), then `telastic setup` on it. */
async function prepareNamespace(address: string, namespace: string): Promise<string> {
  const conn = await Connection.connect({ address });
  try {
    await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') }).catch((err: { code?: number }) => {
      if (err.code !== 6) throw err; // ALREADY_EXISTS
    });
    // Served from the frontend's namespace registry, which refreshes every 2 s (the store has it at once).
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ok = await conn.workflowService.countWorkflowExecutions({ namespace }).then(() => true, (err: Error) => {
        if (Date.now() > deadline) throw new Error(`namespace ${namespace} registered but not served within 30 s: ${err.message}`);
        return false;
      });
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await conn.close();
  }
  const r = await runTelastic(['setup', '--address', address, '--namespace', namespace]);
  if (r.code !== 0) throw new Error(`telastic setup --namespace ${namespace} exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

/**
 * `n` distinct ports below 32768 that were free on 127.0.0.1 a moment ago (the Temporal server
 * keeps its ports in a smallint; the Kubernetes test cluster uses it too).
 */
export async function lowPorts(n: number): Promise<number[]> {
  const picked = new Set<number>();
  for (let tries = 0; picked.size < n; tries++) {
    if (tries > 200) throw new Error(`could not find ${n} free ports below 32768 on 127.0.0.1`);
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    if (!picked.has(port) && (await canListen(port))) picked.add(port);
  }
  return [...picked];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}
