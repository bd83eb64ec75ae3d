/**
 * Starts the one Temporal dev server the suite shares (headless, free port, in-memory) and
 * publishes its address as TEMPORAL_ADDRESS and in a file test/setup/temporal.ts reads.
 * TELASTIC_TEST_TEMPORAL_ADDRESS=host:port reuses a server you already run instead.
 * Controllers and `telastic dev` started by tests host no ledger (TELASTIC_LEDGER=off) unless the
 * test gives them one: an embedded ledger would land in the repository's .telastic/.
 *
 * Everything the run puts in the temporary directory (tests' own directories, agents' run
 * directories, Python's and torch's) goes into one directory of its own, TMPDIR for the tests and
 * every process they start; global-teardown.ts removes it unless TELASTIC_TEST_KEEP_TMP=1.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../../src/temporal/dev-server';
import { addressFile } from './temporal';

export default async function globalSetup(): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'telastic-jest-'));
  chmodSync(tmp, 0o1777); // as /tmp: tests run some processes as another user (PostgreSQL as `postgres`)
  globalThis.__TELASTIC_TEST_TMPDIR__ = tmp;
  process.env.TMPDIR = tmp;
  let address = process.env.TELASTIC_TEST_TEMPORAL_ADDRESS;
  if (!address) {
    const server = await startDevServer({ headless: true, port: 0 });
    globalThis.__TELASTIC_TEST_TEMPORAL__ = server;
    address = server.address;
  }
  process.env.TEMPORAL_ADDRESS = address;
  process.env.TELASTIC_LEDGER = 'off';
  writeFileSync(addressFile(process.pid), JSON.stringify({ address }));
}
