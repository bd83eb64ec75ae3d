import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

test('telastic dev with a key seals, runs a codec server for its Web UI, and points the UI at it', async () => {
  const [port, uiPort, codecPort] = [await freePort(), await freePort(), await freePort()];
  const dir = tempDir();
  const keyFile = path.join(dir, 'job.key');
  writeFileSync(keyFile, randomBytes(32).toString('base64'));
  const child = dev(['--port', String(port), '--ui-port', String(uiPort), '--codec-port', String(codecPort), '--db', path.join(dir, 't.db'), '--encryption-key-file', keyFile]);

  await child.line(/^controller: started/);
  const codec = `http://127.0.0.1:${codecPort}`;
  expect(child.stdout.slice(0, 4)).toEqual([
    `Temporal server: localhost:${port}`,
    `Web UI: http://localhost:${uiPort}`,
    `Codec server: ${codec} (the Web UI decodes sealed payloads through it)`,
    `controller: started 127.0.0.1:${port} default sealed`,
  ]);
  // Two children: the Temporal server, and the codec server in a process of its own (a request
  // that stalls it must not stall the controller in dev's process).
  const cmdlines = childPids(child.proc.pid as number).map((pid) => ({ pid, cmd: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ') }));
  const server = cmdlines.find((c) => c.cmd.includes(' start-dev '));
  const codecChild = cmdlines.find((c) => c.cmd.includes('codec-server-main'));
  expect(server?.cmd).toContain(`--ui-codec-endpoint ${codec}`);
  expect(codecChild?.cmd).toContain(`--port ${codecPort}`);
  expect(codecChild?.cmd).toContain(`--allow-origin http://localhost:${uiPort}`);
  // The Web UI tells browsers where to decode; the codec server answers the UI's origin.
  const settings = (await (await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`)).json()) as { Codec?: { Endpoint?: string } };
  expect(settings.Codec?.Endpoint).toBe(codec);
  const pre = await fetch(`${codec}/decode`, { method: 'OPTIONS', headers: { Origin: `http://localhost:${uiPort}`, 'Access-Control-Request-Method': 'POST' } });
  expect(pre.status).toBe(204);
  expect(pre.headers.get('access-control-allow-origin')).toBe(`http://localhost:${uiPort}`);

  child.proc.kill('SIGTERM');
  await expect(child.exited).resolves.toEqual({ code: 0, signal: null });
  await expect(waitGone(codecChild!.pid, 5_000)).resolves.toBe(true);
  await expect(isListening('127.0.0.1', codecPort)).resolves.toBe(false);
});

test('telastic dev with a bad key file says so in one line and exits 2', async () => {
  const dir = tempDir();
  const keyFile = path.join(dir, 'short.key');
  writeFileSync(keyFile, randomBytes(16).toString('base64'));
  const child = dev(['--port', String(await freePort()), '--db', path.join(dir, 't.db'), '--headless', '--encryption-key-file', keyFile]);
  await expect(child.exited).resolves.toEqual({ code: 2, signal: null });
  expect(child.stderr.join('\n')).toContain(`telastic dev: --encryption-key-file: ${keyFile}: the key is 16 bytes, expected 32`);
});
