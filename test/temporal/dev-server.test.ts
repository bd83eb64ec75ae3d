import * as net from 'node:net';
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, hasSearchAttributes } from '../../src/temporal/dev-server';
import { DevServerStartError } from '../../src/temporal/errors';
import { freePort } from '../../src/temporal/ports';
import { TelasticRound, TelasticState } from '../../src/temporal/search-attributes';
import { closeTestConnection, startPrivateServer, stopPrivateServers, testConnection, TEST_NAMESPACE } from '../setup/temporal';
import { spawnFixture, waitGone } from './child';

afterAll(async () => {
  await closeTestConnection();
  await stopPrivateServers();
});

test('the shared test server answers and has telastic search attributes', async () => {
  const connection = await testConnection();
  const info = await connection.workflowService.getSystemInfo({});
  expect(info.serverVersion).toMatch(/^1\./);
  await expect(hasSearchAttributes(connection, TEST_NAMESPACE)).resolves.toBe(true);
  await expect(hasSearchAttributes(connection, 'no-such-namespace')).resolves.toBe(false);
});

test('a server on a db file survives SIGKILL: workflows and search attributes persist', async () => {
  const dbFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'telastic-db-')), 'temporal.db');
  const first = await startPrivateServer({ dbFile });
  let connection = await Connection.connect({ address: first.address });
  const handle = await new Client({ connection }).workflow.start('nobodyRunsThis', {
    workflowId: 'persist-me',
    taskQueue: 'no-worker',
    typedSearchAttributes: [
      { key: TelasticState, value: 'waiting' },
      { key: TelasticRound, value: 3 },
    ],
  });
  await connection.close();

  first.kill('SIGKILL');
  await expect(first.exited).resolves.toBeNull();

  const second = await startPrivateServer({ dbFile });
  connection = await Connection.connect({ address: second.address });
  try {
    await expect(hasSearchAttributes(connection, 'default')).resolves.toBe(true);
    const described = await new Client({ connection }).workflow.getHandle('persist-me').describe();
    expect(described.runId).toBe(handle.firstExecutionRunId);
    expect(described.status.name).toBe('RUNNING');
    expect(described.typedSearchAttributes.get(TelasticState)).toBe('waiting');
    expect(described.typedSearchAttributes.get(TelasticRound)).toBe(3);
  } finally {
    await connection.close();
  }
  await second.stop();
  await expect(second.exited).resolves.toBe(0);
});

test('a server that cannot start fails fast with its own error', async () => {
  const port = await freePort();
  const accepted: net.Socket[] = [];
  const blocker = net.createServer((socket) => accepted.push(socket)).listen(port, '127.0.0.1');
  try {
    const err = await startDevServer({ port, headless: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DevServerStartError);
    expect((err as Error).message).toMatch(/exited before answering \(code 1\).*address already in use/);
    expect((err as DevServerStartError).stderrTail).toContain('address already in use');
  } finally {
    accepted.forEach((socket) => socket.destroy());
    blocker.close();
  }
});

test('the server dies with its parent, even when the parent is SIGKILLed', async () => {
  const child = spawnFixture('server-child.ts');
  const serverPid = Number((await child.line(/^server pid \d+$/)).split(' ').pop());
  child.proc.kill('SIGKILL');
  await child.exited;
  await expect(waitGone(serverPid, 15_000)).resolves.toBe(true);
});
