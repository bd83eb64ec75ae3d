/**
 * Connect to Temporal with compiled `ConnectionOptions`: read the TLS files, then open a client
 * `Connection` (starting, querying, signalling jobs) or a worker `NativeConnection` (agents and
 * controllers). The only I/O of the connection options lives here.
 */
import { readFile } from 'node:fs/promises';
import { Connection, type TLSConfig } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { ConnectionOptions } from '../cli/connection-options';

/** What both `Connection.connect` and `NativeConnection.connect` take. */
export interface ConnectionConfig {
  address: string;
  /** `false` turns TLS off even with an API key; absent means plaintext unless an API key is set. */
  tls?: TLSConfig | false;
  apiKey?: string;
}

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

/** A client connection (`@temporalio/client`) to the frontend `opts.address`. */
export async function connect(opts: ConnectionOptions): Promise<Connection> {
  return Connection.connect(await toConnectionConfig(opts));
}

/** A worker connection (`@temporalio/worker`) for a Temporal `Worker`. */
export async function connectNative(opts: ConnectionOptions): Promise<NativeConnection> {
  return NativeConnection.connect(await toConnectionConfig(opts));
}
