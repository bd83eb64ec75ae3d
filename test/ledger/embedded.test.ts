/**
 * The embedded ledger with real processes: hosted here or in a child (fixtures/ledger-child.ts),
 * the directory lock against a second host, a SIGKILLed host's directory taken over, readers
 * through connectLedger while a host holds it, or hosting it themselves when none does.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectLedger, hostLedger, LedgerLockedError, NoLedgerError } from '../../src/ledger/connect';
import { readHolder, STALE_MS } from '../../src/ledger/dir-lock';
import { hostEmbeddedLedger } from '../../src/ledger/embedded';
import { SOCKET_NAME } from '../../src/ledger/wire';
import { jobTimeline, writeRecords } from '../../src/ledger/store';
import { spawnFixture, type Child } from '../temporal/child';
import { jobRecords } from './records';

const CHILD = path.join(__dirname, 'fixtures', 'ledger-child.ts');
let root: string;
const children: Child[] = [];

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'telastic-embedded-'));
});

afterEach(async () => {
  for (const c of children.splice(0)) {
    c.proc.kill('SIGKILL');
    await c.exited;
  }
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

function child(...args: string[]): Child {
  const c = spawnFixture(CHILD, args);
  children.push(c);
  return c;
}

/** The timeline of `jobId` as writeRecords(jobRecords(jobId)) leaves it. */
async function expectWholeJob(pool: Parameters<typeof jobTimeline>[0], jobId: string): Promise<void> {
  const t = await jobTimeline(pool, jobId);
  expect(t.job?.state).toBe('succeeded');
  expect([t.rounds.length, t.failures.length, t.checkpoints.length, t.nodeEvents.length]).toEqual([2, 1, 2, 3]);
}

describe('a ledger directory', () => {
  let dir: string;
  beforeAll(() => {
    dir = path.join(root, 'ledger');
  });

  test('keeps what was written across close and reopen; close leaves neither address nor lock', async () => {
    let ledger = await hostEmbeddedLedger(dir);
    try {
      expect(ledger.url).toBe(`postgresql://postgres@/postgres?host=${encodeURIComponent(dir)}`);
      expect(await writeRecords(ledger.pool, jobRecords('job-1'))).toBe(12);
    } finally {
      await ledger.close();
    }
    expect([existsSync(path.join(dir, 'server.json')), existsSync(path.join(dir, 'lock'))]).toEqual([false, false]);
    ledger = await hostEmbeddedLedger(dir);
    try {
      await expectWholeJob(ledger.pool, 'job-1');
      expect(await writeRecords(ledger.pool, jobRecords('job-1'))).toBe(0);
    } finally {
      await ledger.close();
    }
  });

  test('a second host, in another process or in this one, fails naming the directory and the holder', async () => {
    const ledger = await hostEmbeddedLedger(dir);
    try {
      const locked = new LedgerLockedError(dir, process.pid);
      expect(locked.message).toBe(`ledger at ${dir} is in use by process ${process.pid}: run readers (telastic history, report, nodes) alongside it, or stop it first`);
      await expect(hostEmbeddedLedger(dir)).rejects.toEqual(locked);
      const second = child('host', dir);
      expect(await second.line(/^error /)).toBe(`error LedgerLockedError ${locked.message}`);
      expect(await second.exited).toEqual({ code: 1, signal: null });
      await expectWholeJob(ledger.pool, 'job-1'); // and the holder goes on unharmed
    } finally {
      await ledger.close();
    }
  });

  test("a reader in another process sees the host's writes while the host holds it", async () => {
    const ledger = await hostLedger({}, dir);
    try {
      expect(ledger.where).toBe(dir);
      await writeRecords(ledger.pool, jobRecords('job-2'));
      const reader = child('read', dir, 'job-2');
      const line = await reader.line(/^timeline /);
      expect(JSON.parse(line.slice(`timeline ${dir} `.length))).toEqual(await jobTimeline(ledger.pool, 'job-2'));
      expect(await reader.exited).toEqual({ code: 0, signal: null });
    } finally {
      await ledger.close();
    }
  });

  test('a reader hosts it itself, for as long as it reads, when no process does', async () => {
    const reader = await connectLedger({}, dir);
    try {
      expect(reader.where).toBe(dir);
      await expectWholeJob(reader.pool, 'job-2');
      await expect(hostEmbeddedLedger(dir)).rejects.toBeInstanceOf(LedgerLockedError);
    } finally {
      await reader.close();
    }
    expect(existsSync(path.join(dir, 'lock'))).toBe(false);
  });
});

test('a reader without DATABASE_URL or a ledger directory is told where it looked and what to do', async () => {
  const missing = path.join(root, 'missing');
  await expect(connectLedger({}, missing)).rejects.toEqual(new NoLedgerError(missing));
  expect(new NoLedgerError(missing).message).toBe(`no ledger at ${missing}: set DATABASE_URL, or run telastic dev / telastic controller here first`);
  await expect(connectLedger({ TELASTIC_LEDGER_DIR: missing })).rejects.toBeInstanceOf(NoLedgerError);
  expect(existsSync(missing)).toBe(false);
});

test('when its host is SIGKILLed, the next host takes the directory over once the lock is stale, with what was committed', async () => {
  const dir = path.join(root, 'killed');
  mkdirSync(dir);
  const host = child('host', dir, 'job-3');
  await host.line(/^written$/);
  expect(readHolder(dir)?.pid).toBe(host.proc.pid);
  host.proc.kill('SIGKILL');
  expect(await host.exited).toEqual({ code: null, signal: 'SIGKILL' });

  const started = Date.now();
  const hosting = hostEmbeddedLedger(dir); // waits until the dead holder's lock is stale
  // It names itself in server.json as soon as it holds the lock, before opening PGlite.
  const lockedAfterMs = await until(() => readHolder(dir)?.pid === process.pid, STALE_MS + 5_000).then(
    () => Date.now() - started,
    async (err: unknown) => {
      await hosting.then((l) => l.close(), () => undefined);
      throw err;
    },
  );
  const ledger = await hosting;
  try {
    expect(lockedAfterMs).toBeLessThan(STALE_MS + 5_000);
    await expectWholeJob(ledger.pool, 'job-3');
  } finally {
    await ledger.close();
  }
});

test('a host whose lock was taken from it stops serving at once, and leaves the files to the new holder', async () => {
  const dir = path.join(root, 'killed'); // the previous test's ledger, already made
  const host = child('host', dir);
  await host.line(/^hosting /);
  rmSync(path.join(dir, 'lock'), { recursive: true }); // as a process that found it stale would
  await until(() => !existsSync(path.join(dir, SOCKET_NAME)), STALE_MS);
  expect(host.stderr.join('\n')).toMatch(/lost the lock on its directory/);
  host.proc.kill('SIGTERM');
  await host.line(/^closed$/);
  expect(readHolder(dir)?.pid).toBe(host.proc.pid); // not removed: it may be the new holder's by now
});

/** Resolves once `condition` holds (checked every 50 ms); rejects after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
