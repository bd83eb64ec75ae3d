/**
 * Finding 6 of the audit: `telastic dev` kept the Temporal database world-readable (.telastic/
 * 0755, temporal.db 0644), and a job's `--env WANDB_API_KEY=…` (plain without a key) was read
 * from it by another local user. A real `telastic dev` in a project directory as others can
 * enter it (0755); "another user" is uid 65534 through setpriv, so that part needs root.
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../../src/temporal/ports';
import { startTelastic, stopAll, tmpDir, waitFor, type Agent } from '../harness';

const NOBODY = 65534;
const root = process.getuid?.() === 0;
if (!root) console.warn('dev-files.test.ts: the other-user reads are skipped: not root (setpriv cannot switch users)');

const dirs: string[] = [];
const devs: Agent[] = [];
afterEach(() => stopAll(devs.splice(0)));
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A project directory as usual: others may enter and list it. */
function projectDir(): string {
  const dir = tmpDir('hostile-files');
  chmodSync(dir, 0o755);
  dirs.push(dir);
  return dir;
}

/** `telastic dev --headless --no-controller` in `cwd` (the default --db: .telastic/temporal.db). */
async function dev(cwd: string): Promise<{ agent: Agent; port: number }> {
  const port = await freePort();
  const agent = startTelastic('hostile-files', ['dev', '--port', String(port), '--headless', '--no-controller'], {}, ['/usr/bin/env', '-C', cwd]);
  devs.push(agent);
  await waitFor('telastic dev', () => {
    if (agent.proc.exitCode !== null) throw new Error(`dev exited: ${agent.output()}`);
    return /^Temporal server: /m.test(agent.output());
  }, 60_000, 100);
  return { agent, port };
}

/** Starts a job whose spec carries a secret in its env, as `telastic submit --env` puts it; the secret. */
async function jobWithSecret(port: number): Promise<string> {
  const secret = `sk-live-${randomBytes(8).toString('hex')}`;
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  try {
    await new Client({ connection }).workflow.start('job', { taskQueue: 'nobody-polls', workflowId: `job-secret-${secret}`, args: [{ script: 'train.py', env: { WANDB_API_KEY: secret } }] });
  } finally {
    await connection.close();
  }
  return secret;
}

const octal = (m: number) => m.toString(8).padStart(4, '0');

/** The mode of each file in `dir` (SQLite's journal comes and goes: one gone meanwhile is left out). */
function modes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of readdirSync(dir)) {
    try {
      out[f] = statSync(path.join(dir, f)).mode & 0o777;
    } catch {
      // removed between readdir and stat
    }
  }
  return out;
}

/** Each file with the bits it grants group and others: `temporal.db 0000` is private. */
const othersBits = (dir: string) => Object.entries(modes(dir)).map(([f, m]) => `${f} ${octal(m & 0o077)}`);

/** What another user finds of `secret` under `dir`: the files grep names, and grep's complaints. */
function otherUserGrep(dir: string, secret: string): { found: string; complaints: string } {
  const r = spawnSync('/usr/bin/setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', 'grep', '-rl', secret, dir], { encoding: 'utf8' });
  return { found: r.stdout.trim(), complaints: r.stderr.trim() };
}

/** Waits until the secret is on disk under `dir` (plain, no key): else the other user's failure to read it proves nothing. */
async function onDisk(dir: string, secret: string): Promise<string[]> {
  return waitFor('the secret on disk', () => {
    const holding = readdirSync(dir).filter((f) => statSync(path.join(dir, f)).isFile() && readFileSync(path.join(dir, f)).includes(secret));
    return holding.length > 0 ? holding : null;
  }, 30_000, 100);
}

test('.telastic is created 0700 and the database 0600: another user cannot read a job\'s --env secret', async () => {
  const project = projectDir();
  const { port } = await dev(project);
  const secret = await jobWithSecret(port);
  const state = path.join(project, '.telastic');
  const holding = await onDisk(state, secret);

  const dirMode = octal(statSync(state).mode & 0o777);
  const fileBits = othersBits(state);
  process.stdout.write(`modes: .telastic ${dirMode}, ${JSON.stringify(Object.fromEntries(Object.entries(modes(state)).map(([f, m]) => [f, octal(m)])))}; the secret is in ${holding.join(', ')}\n`);
  const other = root ? otherUserGrep(project, secret) : undefined;
  if (other) process.stdout.write(`uid ${NOBODY} grep -rl: found [${other.found}]; ${other.complaints}\n`);
  expect(dirMode).toBe('0700');
  expect(fileBits).toEqual(fileBits.map((b) => b.replace(/ \d+$/, ' 0000')));
  if (other) expect(other.found).toBe('');
}, 120_000);

test('a database an older telastic left 0644 in a 0755 .telastic is made 0600 on the next start', async () => {
  const project = projectDir();
  const first = await dev(project);
  const secret = await jobWithSecret(first.port);
  const state = path.join(project, '.telastic');
  await onDisk(state, secret);
  // Stopped as a user stops it (Ctrl-C), so that its server has ended and closed the database:
  // after a SIGKILL of `telastic dev` the server is still shutting down and its journal comes and goes.
  first.agent.proc.kill('SIGINT');
  expect(await first.agent.exited).toBe(0);
  devs.splice(0);
  chmodSync(state, 0o755);
  for (const f of Object.keys(modes(state))) chmodSync(path.join(state, f), 0o644);
  expect(othersBits(state)).toContain('temporal.db 0044');

  await dev(project);
  const fileBits = othersBits(state);
  expect(fileBits).toContain('temporal.db 0000');
  expect(fileBits).toEqual(fileBits.map((b) => b.replace(/ \d+$/, ' 0000')));
  if (root) expect(otherUserGrep(project, secret).found).toBe('');
}, 120_000);

test('an existing .telastic that others may write to, or that another user owns, is refused in one line', async () => {
  const writable = projectDir();
  mkdirSync(path.join(writable, '.telastic'), { mode: 0o777 });
  chmodSync(path.join(writable, '.telastic'), 0o777);
  const cases = [writable];
  if (root) {
    const foreign = projectDir();
    mkdirSync(path.join(foreign, '.telastic'), { mode: 0o700 });
    chownSync(path.join(foreign, '.telastic'), NOBODY, NOBODY);
    cases.push(foreign);
  }
  for (const project of cases) {
    const agent = startTelastic('hostile-files', ['dev', '--port', String(await freePort()), '--headless', '--no-controller'], {}, ['/usr/bin/env', '-C', project]);
    devs.push(agent);
    // Bounded: a dev that does not refuse runs until killed.
    const code = await Promise.race([agent.exited, new Promise<string>((r) => setTimeout(() => r('still running after 60 s'), 60_000).unref())]);
    expect(code).toBe(2);
    const lines = agent.output().trim().split('\n');
    process.stdout.write(`${lines.join(' | ')}\n`);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^telastic dev: --db: .*\.telastic .*(writable|owned)/);
  }
}, 150_000);
