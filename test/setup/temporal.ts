/**
 * The test suite's Temporal: one dev server for the whole run (started by global-setup.ts), and
 * private servers for tests that kill and restart their own.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Connection } from '@temporalio/client';
import { startDevServer, type DevServer, type DevServerOptions } from '../../src/temporal/dev-server';

declare global {
  /** The shared server, between global setup and teardown (both run in jest's parent process). */
  var __TELASTIC_TEST_TEMPORAL__: DevServer | undefined;
  /** The run's own temporary directory (TMPDIR), between global setup and teardown. */
  var __TELASTIC_TEST_TMPDIR__: string | undefined;
}

/** Namespace of the shared server. */
export const TEST_NAMESPACE = 'default';

/** Where global setup (in jest's parent process `pid`) writes the shared server's address. */
export function addressFile(pid: number): string {
  return path.join(os.tmpdir(), `telastic-jest-temporal-${pid}.json`);
}

/** `host:port` of the shared test server. */
export function testAddress(): string {
  if (process.env.TEMPORAL_ADDRESS) return process.env.TEMPORAL_ADDRESS;
  // Without --runInBand tests run in workers forked by jest's parent, where global setup ran.
  for (const pid of [process.pid, process.ppid]) {
    const file = addressFile(pid);
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { address: string }).address;
  }
  throw new Error('no test Temporal server: run jest with jest.config.js (its globalSetup starts one)');
}

let connection: Promise<Connection> | undefined;

/** A connection to the shared server, one per test file; close it with closeTestConnection(). */
export function testConnection(): Promise<Connection> {
  connection ??= Connection.connect({ address: testAddress() });
  return connection;
}

export async function closeTestConnection(): Promise<void> {
  const c = connection;
  connection = undefined;
  if (c) await (await c).close();
}

const privateServers = new Set<DevServer>();

/** A server of the test's own (headless, free port), e.g. on a db file it kills and restarts. */
export async function startPrivateServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const server = await startDevServer({ headless: true, port: 0, ...opts });
  privateServers.add(server);
  void server.exited.then(() => privateServers.delete(server));
  return server;
}

/** Stops every private server still running (for afterAll). */
export async function stopPrivateServers(): Promise<void> {
  await Promise.all([...privateServers].map((s) => s.stop()));
}
