/** The agent's health check (src/agent/health-check.ts), with real shell commands. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lastLine, runHealthCheck } from '../../src/agent/health-check';

const run = (command: string, timeoutMs = 10_000, env: NodeJS.ProcessEnv = process.env) => runHealthCheck({ command, timeoutMs }, env);

describe('runHealthCheck', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-hc-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('passes on exit 0', async () => {
    await expect(run('true')).resolves.toMatchObject({ ok: true });
  });

  it('fails on a non-zero exit with the last stderr line as the reason', async () => {
    await expect(run('echo progress >&2; echo ok; printf "disk full\\n\\n" >&2; exit 3')).resolves.toMatchObject({ ok: false, reason: 'disk full', exitCode: 3 });
  });

  it('says how it ended when stderr is empty', async () => {
    await expect(run('exit 5')).resolves.toMatchObject({ ok: false, reason: 'health check failed (exit code 5)', exitCode: 5 });
    await expect(run('kill -TERM $$')).resolves.toMatchObject({ ok: false, reason: 'health check failed (killed by SIGTERM)', exitCode: null });
  });

  it('fails after its timeout, and kills the whole check (its children too)', async () => {
    const pidFile = path.join(dir, 'child.pid');
    const started = Date.now();
    const r = await run(`echo checking >&2; sleep 30 & echo $! > ${pidFile}; wait`, 500);
    expect(r).toMatchObject({ ok: false, reason: 'health check timed out after 0.5s: checking', exitCode: null });
    expect(Date.now() - started).toBeLessThan(5000);
    const child = Number(readFileSync(pidFile, 'utf8'));
    const alive = () => {
      try {
        process.kill(child, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (const until = Date.now() + 2000; alive() && Date.now() < until; ) await new Promise((resolve) => setImmediate(resolve));
    expect(alive()).toBe(false);
  });

  it('sees the environment it is given', async () => {
    await expect(run('test "$TELASTIC_CHECKPOINT_DIR" = /ck || { echo "wrong dir: $TELASTIC_CHECKPOINT_DIR" >&2; exit 1; }', 10_000, { ...process.env, TELASTIC_CHECKPOINT_DIR: '/ck' })).resolves.toMatchObject({ ok: true });
  });

  it('cuts a long last line', () => {
    expect(lastLine(`${'x'.repeat(400)}\n`)).toHaveLength(301);
    expect(lastLine('\n  \n')).toBeNull();
  });
});

describe('examples/health_check.sh', () => {
  const script = path.resolve(__dirname, '../../examples/health_check.sh');
  it('passes on this (CPU) machine', async () => {
    await expect(run(script)).resolves.toMatchObject({ ok: true });
  });
  it('fails with one line naming what is short', async () => {
    const r = await run(script, 10_000, { ...process.env, TELASTIC_CHECKPOINT_DIR: os.tmpdir(), HEALTH_MIN_DISK_MB: String(1e12) });
    expect(r).toMatchObject({ ok: false, exitCode: 1 });
    expect(r.ok || r.reason).toMatch(/^disk full: \d+ MB free under .* \(need 1000000000000 MB\)$/);
  });
});
