/**
 * Real agents for end-to-end tests: `node bin/telastic.js run …` child processes against the
 * test's Temporal server, with the stand-in worker of test/fixtures/worker.py.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ROOT, startTelastic, stopAll, waitFor, type Agent } from '../../test-support/agents';
import { testAddress } from '../setup/temporal';
export { BIN, ROOT, agentsReport, alive, explained, runTelastic, startAgent, startTelastic, stopAll, waitFor, type Agent } from '../../test-support/agents';
import { getJobStatus } from '../../src/client/api';
import { getPoolStatus } from '../../src/client/pool';
import type { PoolState } from '../../src/pool/state';
import type { JobStatus } from '../../src/job/status';

export const WORKER = path.join(ROOT, 'test', 'fixtures', 'worker.py');

export function tmpDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `telastic-${prefix}-`));
}

let seq = 0;
export function uniqueJobId(name: string): string {
  return `${name}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
}

/** The job's status; a query that a frozen coordinator swallowed fails after 3 s (and is retried by waitFor). */
export async function status(conn: Connection, jobId: string): Promise<JobStatus> {
  return conn.withDeadline(Date.now() + 3000, () => getJobStatus({ connection: conn }, jobId));
}

/** Wait until the job runs a round matching `pred`. */
export function waitForRound(conn: Connection, jobId: string, pred: (s: JobStatus) => boolean, timeoutMs = 60_000): Promise<JobStatus> {
  return waitFor(`job ${jobId} round`, async () => {
    const s = await status(conn, jobId);
    return s.state === 'running' && pred(s) ? s : null;
  }, timeoutMs);
}

/** Environments the fixture workers recorded, keyed `round.node.rank`. */
export function recordedEnvs(out: string): Map<string, Record<string, string>> {
  const m = new Map<string, Record<string, string>>();
  if (!existsSync(out)) return m;
  for (const f of readdirSync(out)) {
    const match = /^env\.(.+)\.json$/.exec(f);
    if (match) m.set(match[1], JSON.parse(readFileSync(path.join(out, f), 'utf8')) as Record<string, string>);
  }
  return m;
}

/** Pids the fixture workers recorded for a round (all rounds when omitted). */
export function recordedPids(out: string, round?: number): number[] {
  if (!existsSync(out)) return [];
  return readdirSync(out)
    .filter((f) => f.startsWith('pid.') && (round === undefined || f.startsWith(`pid.${round}.`)))
    .map((f) => Number(readFileSync(path.join(out, f), 'utf8')));
}

export function finish(out: string): void {
  writeFileSync(path.join(out, 'finish'), '');
}

/** Fast timings for tests: a node is noticed lost after 3 s instead of 10. */
export const FAST_RDZV = ['--rdzv-conf', 'heartbeat_timeout=3,last_call_timeout=1,join_timeout=60,prepare_timeout=3', '--shutdown-timeout', '3', '--monitor-interval', '0.1'];

/**
 * A test file's connection to the shared server and its agents; after the file, agents are
 * thawed (a test may have frozen one) and killed, and the connection closed.
 */
export function e2eSuite(): { readonly conn: Connection; agents: Agent[] } {
  let conn: Connection | undefined;
  const agents: Agent[] = [];
  beforeAll(async () => {
    conn = await Connection.connect({ address: testAddress() });
  });
  afterAll(async () => {
    for (const a of agents) if (a.proc.pid) try { process.kill(a.proc.pid, 'SIGCONT'); } catch { /* gone */ }
    await stopAll(agents);
    await conn?.close();
  });
  return {
    get conn() {
      if (!conn) throw new Error('e2eSuite: no connection outside a test');
      return conn;
    },
    agents,
  };
}

/** A pool of agents and the controller that runs its workflows, on a task queue of its own. */
export interface TestPool {
  name: string;
  taskQueue: string;
  controller(): Agent;
  agent(nodeId: string, extra?: string[], env?: NodeJS.ProcessEnv): Agent;
}

export function testPool(name: string, agents: Agent[], allow: string[], address = testAddress()): TestPool {
  const pool = uniqueJobId(name);
  const taskQueue = `tq-${pool}`;
  const conn = ['--address', address, '--task-queue', taskQueue];
  return {
    name: pool,
    taskQueue,
    controller() {
      const c = startTelastic(`${pool}-controller`, ['controller', ...conn]);
      agents.push(c);
      return c;
    },
    agent(nodeId, extra = [], env = {}) {
      const args = ['agent', '--pool', pool, '--node-id', nodeId, '--local-addr', '127.0.0.1', '--heartbeat-timeout', '3', '--shutdown-timeout', '3', ...allow.flatMap((p) => ['--allow', p]), ...conn, ...extra];
      const a = startTelastic(nodeId, args, env);
      agents.push(a);
      return a;
    },
  };
}

/** The pool's state; a query a missing coordinator swallowed fails after 3 s (waitFor retries). */
export async function poolState(conn: Connection, pool: string): Promise<PoolState> {
  return conn.withDeadline(Date.now() + 3000, () => getPoolStatus({ connection: conn }, pool));
}

/** Node id → the job it is granted to, or its state when it is not granted. */
export function owners(p: PoolState): Record<string, string> {
  return Object.fromEntries(p.nodes.map((n) => [n.nodeId, n.state === 'granted' ? (n.jobId as string) : n.state]));
}
