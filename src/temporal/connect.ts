/**
 * Connect to Temporal with compiled `ConnectionOptions`: read the TLS files, then open a client
 * `Connection` (starting, querying, signalling jobs) or a worker `NativeConnection` (agents and
 * controllers). The only I/O of the connection options lives here. Given a `Wait`, connecting
 * rides out a server that is not up yet, restarting or overloaded (retry.ts).
 */
import { readFile } from 'node:fs/promises';
import { Connection, type TLSConfig } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { explained } from './refusal';
import { withRetry } from './retry';
import type { ConnectionConfig, ConnectionOptions } from './types';

export type { ConnectionConfig } from './types';

/** How long to wait for Temporal, and how the user changes it (named in the give-up line). */
export interface Wait {
  /** `Infinity` for a service that waits for ever. */
  patienceMs: number;
  patienceName?: string;
  signal?: AbortSignal;
}

/** Each connection attempt's own bound; the `Wait` bounds them all. */
const ATTEMPT_TIMEOUT_MS = 3_000;

async function readPem(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (cause) {
    // Duck-typed: errors from another realm (jest's sandbox) are not `instanceof Error` here.
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    const reason = code ?? String((cause as Error | undefined)?.message ?? cause);
    throw new Error(`cannot read TLS ${what} ${path}: ${reason}`, { cause });
  }
}

/** Read the certificate files named by `opts.tls` and build the SDK's connection options. */
export async function toConnectionConfig(opts: ConnectionOptions): Promise<ConnectionConfig> {
  const config: ConnectionConfig = { address: opts.address };
  if (opts.apiKey !== undefined) config.apiKey = opts.apiKey;
  if (opts.tls === false) config.tls = false;
  else if (opts.tls) {
    const { certPath, keyPath, caPath, serverName } = opts.tls;
    const tls: TLSConfig = {};
    if (serverName !== undefined) tls.serverNameOverride = serverName;
    if (caPath !== undefined) tls.serverRootCACertificate = await readPem(caPath, 'CA certificate');
    if (certPath !== undefined && keyPath !== undefined) {
      tls.clientCertPair = {
        crt: await readPem(certPath, 'certificate'),
        key: await readPem(keyPath, 'key'),
      };
    }
    config.tls = tls;
  }
  return config;
}

/** A client connection (`@temporalio/client`) to the frontend `opts.address`; waits when given `wait`. */
export async function connect(opts: ConnectionOptions, wait?: Wait): Promise<Connection> {
  const config = await toConnectionConfig(opts);
  const once = (leftMs = Infinity) => explained(config, () => Connection.connect({ ...config, connectTimeout: Math.max(500, Math.min(ATTEMPT_TIMEOUT_MS, leftMs)) }));
  return wait ? withRetry(once, { address: opts.address, ...wait }) : once();
}

/** A worker connection (`@temporalio/worker`) for a Temporal `Worker`; waits when given `wait`. */
export async function connectNative(opts: ConnectionOptions, wait?: Wait): Promise<NativeConnection> {
  const config = await toConnectionConfig(opts);
  const once = () => explained(config, () => NativeConnection.connect(config));
  return wait ? withRetry(once, { address: opts.address, ...wait }) : once();
}

/** Anything with Temporal's workflow service: a client `Connection` or a `NativeConnection`. */
interface HasWorkflowService {
  workflowService: Pick<Connection['workflowService'], 'describeNamespace' | 'getSystemInfo'>;
}

/**
 * Run one Temporal call at a time through `withRetry` with the same wait; NamespaceNotFound is
 * confirmed with describeNamespace on `conn` (see retry.ts for why), and getSystemInfo tells
 * when the server is back.
 */
export function retrying(conn: HasWorkflowService, opts: Pick<ConnectionOptions, 'address' | 'namespace'>, wait: Wait) {
  const probeNamespace = () => within(ATTEMPT_TIMEOUT_MS, conn.workflowService.describeNamespace({ namespace: opts.namespace }));
  const ping = () => within(ATTEMPT_TIMEOUT_MS, conn.workflowService.getSystemInfo({}));
  return <T>(fn: () => Promise<T>): Promise<T> => withRetry(fn, { address: opts.address, probeNamespace, ping, ...wait });
}

/**
 * Wait until the server serves `opts.namespace` (describeNamespace answers). Before creating a
 * `Worker`: Worker.create checks the namespace itself, and a failed Worker.create cannot be
 * retried on the same connection (core keeps the half-registered worker).
 */
export async function waitForNamespace(conn: HasWorkflowService, opts: Pick<ConnectionOptions, 'address' | 'namespace'>, wait: Wait): Promise<void> {
  await retrying(conn, opts, wait)(() => within(ATTEMPT_TIMEOUT_MS, conn.workflowService.describeNamespace({ namespace: opts.namespace })));
}

/** `p`, or a DEADLINE_EXCEEDED-like rejection after `ms` (a busy server may not answer at all). */
function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Deadline exceeded after ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
