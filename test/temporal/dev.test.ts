import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort, isListening } from '../../src/temporal/ports';
import { hasSearchAttributes } from '../../src/temporal/readiness';
import { childPids, spawnFixture, waitGone, type Child } from './child';

const dirs: string[] = [];
const children: Child[] = [];
// Also when a test fails: SIGKILL to a dev leaves its server the parent-death signal (setpriv).
afterEach(() => children.splice(0).forEach((c) => c.proc.exitCode === null && c.proc.signalCode === null && c.proc.kill('SIGKILL')));
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function dev(args: string[]): Child {
  const child = spawnFixture('telastic-dev.ts', args);
  children.push(child);
  return child;
}
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-dev-'));
  dirs.push(dir);
  return dir;
}

test('telastic dev prints the address and the UI, runs the controller, and stops everything on SIGTERM', async () => {
  const [port, uiPort] = [await freePort(), await freePort()];
  const db = path.join(tempDir(), 'nested', 'temporal.db');
  const child = dev(['--port', String(port), '--ui-port', String(uiPort), '--db', db]);

  await child.line(/^controller: started/);
  expect(child.stdout.slice(0, 3)).toEqual([
    `Temporal server: localhost:${port}`,
    `Web UI: http://localhost:${uiPort}`,
    `controller: started 127.0.0.1:${port} default`,
  ]);
  expect(existsSync(db)).toBe(true);
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  await expect(hasSearchAttributes(connection, 'default')).resolves.toBe(true);
  await connection.close();
  expect((await fetch(`http://127.0.0.1:${uiPort}/`)).status).toBe(200);
  const [serverPid] = childPids(child.proc.pid as number);

  const signalled = Date.now();
  child.proc.kill('SIGTERM');
  await expect(child.exited).resolves.toEqual({ code: 0, signal: null });
  expect(child.stdout).toContain('controller: stopped');
  await expect(waitGone(serverPid, 5_000)).resolves.toBe(true);
  // The server is killed once the controller stopped, not put through its ~1.7 s cluster drain.
  expect(Date.now() - signalled).toBeLessThan(1_000);
  for (const p of [port, uiPort]) await expect(isListening('127.0.0.1', p)).resolves.toBe(false);
});

test('telastic dev --headless --no-controller prints only the address and exits 0 on SIGINT', async () => {
  const port = await freePort();
  const db = path.join(tempDir(), 'temporal.db');
  const child = dev(['--port', String(port), '--db', db, '--headless', '--no-controller']);

  await child.line(/^Temporal server:/);
  child.proc.kill('SIGINT');
  await expect(child.exited).resolves.toEqual({ code: 0, signal: null });
  expect(child.stdout.filter((l) => l !== '')).toEqual([`Temporal server: localhost:${port}`]);
});
