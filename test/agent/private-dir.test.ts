/**
 * Audit finding 10: the agent's state dir and the embedded ledger's dir are this user's only
 * (src/private-dir.ts), with real directories and, for the state dir, a planted state file that
 * names a real process group.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createReaper, killOrphans } from '../../src/agent/workers';
import { hostEmbeddedLedger } from '../../src/ledger/embedded';
import { ensurePrivateDir, UnsafeDirError } from '../../src/private-dir';
import { alive, removeTempDirs, tempDir } from './helpers';

const mode = (p: string) => statSync(p).mode & 0o777;
const isRoot = process.getuid?.() === 0;
const NOBODY = 65_534;
const groups: number[] = [];

/** A live detached process group that a planted state file can name. */
function victimGroup(): number {
  const c = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
  c.unref();
  groups.push(c.pid!);
  return c.pid!;
}

/** A state file as a dead agent would have left it, naming `pgid`. */
function plant(dir: string, pgid: number): string {
  const file = join(dir, 'agent-999999.json'); // above pid_max's default: that agent is dead
  writeFileSync(file, JSON.stringify({ agentPid: 999_999, agentStartTime: null, pgids: [pgid], startTimes: {} }));
  return file;
}

afterAll(() => {
  for (const g of groups) try { process.kill(-g, 'SIGKILL'); } catch { /* gone */ }
  removeTempDirs();
});

describe('ensurePrivateDir', () => {
  it('creates a missing directory, and its missing parents, 0700', () => {
    const dir = join(tempDir(), 'a', 'b');
    ensurePrivateDir(dir, 'state dir');
    expect([mode(dir), mode(join(dir, '..'))]).toEqual([0o700, 0o700]);
  });

  it('tightens a directory of ours that others could only read (an earlier version made it 0755)', () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    ensurePrivateDir(dir, 'state dir');
    expect(mode(dir)).toBe(0o700);
  });

  it.each([0o777, 0o775, 0o757, 0o1777].map((m) => [m.toString(8), m]))('refuses a directory writable by others (mode %s) and leaves it as it is', (_, m) => {
    const dir = tempDir();
    chmodSync(dir, m);
    expect(() => ensurePrivateDir(dir, 'state dir')).toThrow(UnsafeDirError);
    expect(() => ensurePrivateDir(dir, 'state dir')).toThrow(`state dir ${dir}: writable by group or others (mode 0${(m & 0o777).toString(8)}): others may have put files in it; use a new directory, or empty it and chmod 700 it`);
    expect(statSync(dir).mode & 0o7777).toBe(m);
  });

  it('refuses a directory owned by another user', () => {
    const dir = isRoot ? tempDir() : '/';
    if (isRoot) chownSync(dir, NOBODY, NOBODY);
    const owner = statSync(dir).uid;
    expect(() => ensurePrivateDir(dir, 'ledger dir')).toThrow(`ledger dir ${dir}: owned by uid ${owner}, not by this user (uid ${process.getuid!()}); use a directory of your own`);
  });

  it('refuses a file', () => {
    const file = join(tempDir(), 'f');
    writeFileSync(file, '');
    expect(() => ensurePrivateDir(file, 'state dir')).toThrow(`state dir ${file}: not a directory`);
  });
});

describe('the state dir: a planted agent file cannot choose what a starting agent kills', () => {
  it('refuses a shared, world-writable state dir before reading any file in it', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o1777); // /tmp-like, as a shared TELASTIC_STATE_DIR would be
    const pgid = victimGroup();
    plant(dir, pgid);
    await expect(killOrphans(dir, 500)).rejects.toThrow(`state dir ${dir}: writable by group or others`);
    await expect(createReaper(dir)).rejects.toThrow(UnsafeDirError);
    expect(alive(pgid)).toBe(true);
  });

  (isRoot ? it : it.skip)('ignores a state file another user put in a directory of ours', async () => {
    const dir = tempDir();
    const pgid = victimGroup();
    const file = plant(dir, pgid);
    chownSync(file, NOBODY, NOBODY);
    expect(await killOrphans(dir, 500)).toEqual({ killed: [], removed: [] });
    expect(alive(pgid)).toBe(true);
  });

  it('still kills what a dead agent of ours left', async () => {
    const dir = tempDir();
    const pgid = victimGroup();
    plant(dir, pgid);
    expect((await killOrphans(dir, 5000)).killed).toEqual([pgid]);
    expect(alive(pgid)).toBe(false);
  });
});

describe('the embedded ledger dir', () => {
  it('refuses an existing directory writable by others (its socket and server.json would be theirs to reach or replace)', async () => {
    const dir = join(tempDir(), 'ledger');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    await expect(hostEmbeddedLedger(dir)).rejects.toThrow(`ledger dir ${dir}: writable by group or others (mode 0777)`);
  });
});
