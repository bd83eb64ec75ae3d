/**
 * A throwaway PostgreSQL 15 cluster for one test file: `initdb` into a temp dir, `pg_ctl start` on
 * a free loopback port with its unix socket in that dir and `fsync=off`. `stop()`/`start()` take
 * it down and up again on the same data dir and port (an outage); `destroy()` stops and deletes it.
 *
 * Binaries: `$PG_BINDIR`, else `pg_config --bindir`, else /usr/lib/postgresql/15/bin.
 * As root, initdb and postgres refuse to run, so every command runs through `setpriv` as the
 * `postgres` user (else `nobody`), and the temp dir is handed to that user first.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/temporal/ports';

const run = promisify(execFile);

export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust auth, no password). */
  url: string;
  /** `pg_ctl stop -m fast`: connections drop and new ones are refused until `start()`. */
  stop(): Promise<void>;
  /** Starts it again on the same data dir and port. */
  start(): Promise<void>;
  /** Stops it (if running) and deletes its temp dir. */
  destroy(): Promise<void>;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const as = runAs();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-pg-'));
  if (as) chownSync(dir, as.uid, as.gid);
  const data = path.join(dir, 'data');
  const port = await freePort();
  const pg = (tool: string, args: string[]) => command(as, path.join(bin, tool), args, dir);

  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-locale', '-E', 'UTF8', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c shared_buffers=16MB`;
  const start = () => pg('pg_ctl', ['start', '-w', '-D', data, '-l', path.join(dir, 'postgres.log'), '-o', options]);
  const stop = () => pg('pg_ctl', ['stop', '-w', '-m', 'fast', '-D', data]);
  // A test process that dies without destroy() must not leave a postgres behind on a shared
  // machine (jest's sandboxed `process` runs no 'exit' handler): a watchdog stops it then.
  const watchdog = watch(dir, asUser(as, path.join(bin, 'pg_ctl'), ['stop', '-m', 'immediate', '-D', data]));
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    async destroy() {
      try {
        process.kill(-watchdog.pid!, 'SIGKILL');
      } catch {}
      if (existsSync(path.join(data, 'postmaster.pid'))) await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function binDir(): string {
  const candidates = [process.env.PG_BINDIR, pgConfigBinDir(), '/usr/lib/postgresql/15/bin'].filter((d): d is string => !!d);
  const found = candidates.find((d) => existsSync(path.join(d, 'initdb')) && existsSync(path.join(d, 'pg_ctl')));
  if (!found) throw new Error(`PostgreSQL 15 initdb/pg_ctl: not found in ${candidates.join(', ')} (install postgresql-15 or set PG_BINDIR)`);
  return found;
}

function pgConfigBinDir(): string | undefined {
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** The unprivileged user to run as when we are root (initdb refuses root), else null. */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const user of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
      return { uid: id('-u'), gid: id('-g') };
    } catch {}
  }
  throw new Error('running as root: initdb refuses root and neither user postgres nor nobody exists to run it as');
}

async function command(as: { uid: number; gid: number } | null, file: string, args: string[], cwd: string): Promise<void> {
  const [cmd, argv] = asUser(as, file, args);
  try {
    await run(cmd, argv, { cwd, env: { ...process.env, LC_ALL: 'C' }, timeout: 60_000 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    const line = (e.stderr ?? '').trim().split('\n').pop() || e.message;
    const tool = path.basename(file);
    throw new Error(`${tool === 'pg_ctl' ? `pg_ctl ${args[0]}` : tool}: ${line}`);
  }
}

/** The command line that runs `file args` as `as` (through setpriv), or as we are. */
function asUser(as: { uid: number; gid: number } | null, file: string, args: string[]): [string, string[]] {
  return as ? ['setpriv', [`--reuid=${as.uid}`, `--regid=${as.gid}`, '--clear-groups', '--', file, ...args]] : [file, args];
}

/** A detached shell that, once this process is gone, runs `stop` and deletes `dir` (checks every 2 s). */
function watch(dir: string, [cmd, argv]: [string, string[]]): ChildProcess {
  const script = 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; dir=$2; shift 2; "$@"; rm -rf "$dir"';
  const child = spawn('sh', ['-c', script, 'watchdog', String(process.pid), dir, cmd, ...argv], { detached: true, stdio: 'ignore' });
  child.unref();
  return child;
}

/**
 * A throwaway PostgreSQL and a pool on it for the calling test file: started before its tests
 * (migrated when `migrate` is given), pool ended and cluster deleted after them.
 */
export function postgresPerFile(o: { max?: number; migrate?: (pool: import('pg').Pool) => Promise<unknown> } = {}): { readonly db: TestPostgres; readonly pool: import('pg').Pool } {
  let db: TestPostgres | undefined;
  let pool: import('pg').Pool | undefined;
  beforeAll(async () => {
    const { Pool } = await import('pg');
    db = await startPostgres();
    pool = new Pool({ connectionString: db.url, max: o.max ?? 2 });
    pool.on('error', () => undefined); // a test that stops the server drops idle connections
    await o.migrate?.(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.destroy();
  });
  return {
    get db() {
      if (!db) throw new Error('postgresPerFile: used before its beforeAll ran');
      return db;
    },
    get pool() {
      if (!pool) throw new Error('postgresPerFile: used before its beforeAll ran');
      return pool;
    },
  };
}
