/**
 * `telastic dev`: a Temporal dev server (SQLite under .telastic/ by default) and, unless told
 * not to, a controller, in the foreground until SIGINT/SIGTERM. On the first signal the
 * controller is shut down first (it needs the server to finish its tasks), then the server is
 * killed; a second signal stops waiting for the controller.
 *
 * Why the server is killed rather than asked to stop: its SIGTERM runs a cluster's drain (the
 * frontend holds its connections for at least 1 s, a floor in the server's code, so that load
 * balancers notice; then matching unloads and persists each task queue in turn), about 1.7 s in
 * all, for a one-process server whose workers have already stopped. Every change it acknowledged
 * is already a committed SQLite transaction, so a restart on the same --db shows every job as it
 * was (test/temporal/dev-server.test.ts kills one and reads its workflows back).
 *
 * With a key and a Web UI, the codec server runs in a child process of its own (dev-codec.ts):
 * anyone who reaches it may send it anything, and the controller and ledger here must not stall.
 */
import { hostname } from 'node:os';
import * as path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { DataConverter } from '@temporalio/common';
import { resolveTemporalCli } from '../temporal/binary';
import { readSealingKeys, workerDataConverter } from '../temporal/data-converter';
import { startDevServer, type DevServer } from '../temporal/dev-server';
import { freePort } from '../temporal/ports';
import { compileAcceptUnsealed, compileKeyFiles, type ConnectionOptions } from './connection-options';
import { prepareDbDir } from './dev-db-dir';
import { startCodecChild, type CodecChild } from './dev-codec';
import { UsageError } from './errors';
import { addMetricsOptions, compileMetricsOptions, type MetricsFlagValues } from './metrics-options';
import { openMetrics, type MetricsEndpoint } from '../metrics/endpoint';

/** A running controller, as `telastic dev` needs it. */
export interface DevController {
  shutdown(): Promise<void>;
}

/** Starts a controller against the dev server at `address` (host:port) in `namespace`; `metrics`: dev's --metrics-port. */
export type StartController = (address: string, namespace: string, dbFile: string, dataConverter: DataConverter, metrics?: MetricsEndpoint) => Promise<DevController>;

export interface DevOptions {
  /** gRPC port of the frontend. CLI default 7233. */
  port: number;
  /** Web UI port. CLI default 8233. */
  uiPort: number;
  /** SQLite file; its directory is created 0700 (dev-db-dir.ts). CLI default `.telastic/temporal.db`. */
  db: string;
  headless: boolean;
  noController: boolean;
  /** CLI default 'default'. */
  namespace?: string;
  /** Address to bind. @default '127.0.0.1' */
  ip?: string;
  /**
   * Key files (`--encryption-key-file`, TELASTIC_ENCRYPTION_KEY_FILE): the controller seals with
   * them, and a codec server on `codecPort` decodes for the Web UI (`--ui-codec-endpoint`).
   */
  encryptionKeyFiles?: ConnectionOptions['encryptionKeyFiles'];
  /** With a key, the controller still opens unsealed payloads (TELASTIC_ACCEPT_UNSEALED=1). */
  acceptUnsealed?: boolean;
  /** Port of the codec server (with a key and a Web UI); 0 picks a free one. CLI default 8081. */
  codecPort?: number;
  /** Runs the controller; without it no controller runs. */
  startController?: StartController;
  /** The metrics endpoint (--metrics-port), handed to the controller. */
  metrics?: MetricsEndpoint;
  /** Where the address lines go. @default console.log */
  print?: (line: string) => void;
  /** Where errors and the server's log go. @default process.stderr */
  printError?: (line: string) => void;
}

/** Runs until SIGINT/SIGTERM or until the server dies; resolves to the exit code (0 after a signal). */
export async function runDev(opts: DevOptions): Promise<number> {
  const print = opts.print ?? ((line: string) => console.log(line));
  const printError = opts.printError ?? ((line: string) => process.stderr.write(`${line}\n`));
  const namespace = opts.namespace ?? 'default';
  const ip = opts.ip ?? '127.0.0.1';
  const shownHost = ip === '127.0.0.1' || ip === 'localhost' ? 'localhost' : ip === '0.0.0.0' ? hostname() : ip;

  const dbFile = path.resolve(opts.db);
  let keys;
  try {
    prepareDbDir(dbFile);
    keys = await readSealingKeys({ encryptionKeyFiles: opts.encryptionKeyFiles });
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    printError(`telastic dev: ${err.message}`);
    return 2;
  }
  const dataConverter = workerDataConverter(keys, { namespace, acceptUnsealed: opts.acceptUnsealed }, (err) => printError(`telastic dev: controller: ${err.message}`));

  // The server's log is worth showing while it serves; while it stops it is only dial errors.
  let stopping = false;
  let server: DevServer;
  let codec: CodecChild | undefined;
  let codecEndpoint: string | undefined;
  let uiPort = opts.uiPort;
  try {
    // With a key, the Web UI decodes through a codec server (CORS: the UI's origin only, known
    // before either starts, as the codec server is told its origins when it starts).
    if (keys.length > 0 && !opts.headless && opts.encryptionKeyFiles) {
      uiPort ||= await freePort(ip);
      const allowOrigins = [...new Set([ip, shownHost, 'localhost', '127.0.0.1'])].map((h) => `http://${h.includes(':') ? `[${h}]` : h}:${uiPort}`);
      codec = await startCodecChild({ keyFiles: opts.encryptionKeyFiles.paths, port: opts.codecPort ?? 0, host: ip, allowOrigins, onLog: printError });
      void codec.exited.then((code) => stopping || printError(`telastic dev: the codec server exited (code ${code}): the Web UI shows sealed payloads undecoded until dev restarts`));
      // The Web UI hands this to browsers, maybe on other machines: bound to 0.0.0.0, the codec
      // server is named as the Web UI is (http://0.0.0.0:… would be each browser's own machine).
      codecEndpoint = ip === '0.0.0.0' ? `http://${shownHost}:${portOf(codec.url)}` : codec.url;
    }
    const cli = await resolveTemporalCli({ onInstall: printError });
    server = await startDevServer({
      port: opts.port, uiPort, headless: opts.headless, dbFile, namespace, ip, cli,
      uiCodecEndpoint: codecEndpoint,
      onLog: (line) => stopping || printError(`temporal: ${line}`),
    });
  } catch (err) {
    printError(`telastic dev: ${(err as Error).message}`);
    stopping = true;
    await codec?.stop();
    return 1;
  }

  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
  let onSignal: (signal: NodeJS.Signals) => void = () => undefined;
  const handler = (signal: NodeJS.Signals) => onSignal(signal);
  for (const s of signals) process.on(s, handler);
  const firstSignal = new Promise<NodeJS.Signals>((resolve) => (onSignal = resolve));
  print(`Temporal server: ${shownHost}:${portOf(server.address)}`);
  if (server.uiUrl) print(`Web UI: http://${shownHost}:${portOf(server.uiUrl)}`);
  if (codec) print(`Codec server: ${codecEndpoint} (the Web UI decodes sealed payloads through it)`);
  else if (keys.length > 0) print('Payloads are sealed (no Web UI to decode them: headless)');

  try {
    let controller: DevController | undefined;
    if (!opts.noController && opts.startController) {
      try {
        controller = await opts.startController(server.address, namespace, dbFile, dataConverter, opts.metrics);
      } catch (err) {
        printError(`telastic dev: the controller did not start: ${(err as Error).message}`);
        stopping = true;
        await Promise.all([kill(server), codec?.stop()]);
        return 1;
      }
    }

    const ended = await Promise.race([
      firstSignal.then((signal) => ({ signal })),
      server.exited.then((code) => ({ code })),
    ]);
    if ('code' in ended) printError(`telastic dev: the Temporal server exited unexpectedly (code ${ended.code})`);

    stopping = 'signal' in ended;
    const forced = new Promise<'forced'>((resolve) => (onSignal = () => resolve('forced')));
    const stopped = controller?.shutdown().catch((err: Error) => printError(`telastic dev: controller shutdown: ${err.message}`));
    const outcome = await Promise.race([stopped, forced]);
    stopping = true;
    await Promise.all([kill(server), codec?.stop()]);
    return outcome === 'forced' ? 130 : 'code' in ended ? 1 : 0;
  } finally {
    for (const s of signals) process.off(s, handler);
  }
}

/** Kills the server (see the opening comment for why not SIGTERM) and waits until it is gone. */
async function kill(server: DevServer): Promise<void> {
  server.kill('SIGKILL');
  await server.exited;
}

function portOf(address: string): string {
  return address.slice(address.lastIndexOf(':') + 1);
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidArgumentError(`not a port: ${value}`);
  return port;
}

/** Adds `telastic dev` to `program`; the action exits the process with runDev's code. */
export function registerDevCommand(program: Command, deps: { startController?: StartController } = {}): Command {
  const cmd = program
    .command('dev')
    .description('run a Temporal dev server and a controller in the foreground until Ctrl-C')
    .option('--port <port>', 'gRPC port of the Temporal frontend', parsePort, 7233)
    .option('--ui-port <port>', 'port of the Temporal Web UI', parsePort, 8233)
    .option('--db <file>', 'SQLite file that keeps jobs across restarts', '.telastic/temporal.db')
    .option('--namespace <namespace>', 'Temporal namespace to create and serve', 'default')
    .option('--ip <address>', 'address to bind the server to', '127.0.0.1')
    .option('--headless', 'no Web UI', false)
    .option('--no-controller', 'do not run a controller (run `telastic controller` yourself)')
    .option('--encryption-key-file <path[:path…]>', 'seal payloads with these keys and decode them for the Web UI (env TELASTIC_ENCRYPTION_KEY_FILE)')
    .option('--codec-port <port>', 'port of the codec server the Web UI decodes through (with a key)', parsePort, 8081);
  return addMetricsOptions(cmd)
    .action(async (o: MetricsFlagValues & { port: number; uiPort: number; db: string; namespace: string; ip: string; headless: boolean; controller: boolean; encryptionKeyFile?: string; codecPort: number }) => {
      const metrics = (await openMetrics(compileMetricsOptions(o, process.env), (line) => console.log(`Metrics: ${line}`))) ?? undefined;
      if (metrics && !o.controller) metrics.setReady(async () => 'no controller in this process (--no-controller)');
      const code = await runDev({
        metrics,
        port: o.port, uiPort: o.uiPort, db: o.db, namespace: o.namespace, ip: o.ip, headless: o.headless,
        noController: !o.controller, startController: deps.startController,
        encryptionKeyFiles: compileKeyFiles(o.encryptionKeyFile, process.env), acceptUnsealed: compileAcceptUnsealed(undefined, process.env), codecPort: o.codecPort,
      });
      await metrics?.close();
      process.exit(code);
    });
}
