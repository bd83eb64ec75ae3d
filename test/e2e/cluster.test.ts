/**
 * telastic on a real Temporal cluster (test/setup/temporal-cluster.ts): frontend, history,
 * matching and worker as separate processes on PostgreSQL, with SQL visibility. A `telastic run`
 * job and a pool job finish; `kill -9` of the history service mid-job and its restart, and a
 * PostgreSQL restart, cost no training restart; of two controllers, the one running the job's
 * workflow is killed and the other carries the job to its end.
 *
 * Jobs keep the default heartbeat timeout (10 s, not the 3 s of the other e2e files): a service
 * outage shorter than it must cost nothing, and each outage's length is measured and printed.
 */
import { Client, Connection } from '@temporalio/client';
import path from 'node:path';
import { submitJob } from '../../src/client/pool';
import { startTemporalCluster, SERVICES, type TemporalCluster } from '../setup/temporal-cluster';
import { WORKER, alive, finish, owners, poolState, recordedEnvs, recordedPids, runTelastic, startAgent, startTelastic, status, stopAll, testPool, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const HEARTBEAT_TIMEOUT_S = 10;
const CONF = ['--rdzv-conf', `heartbeat_timeout=${HEARTBEAT_TIMEOUT_S},last_call_timeout=1,join_timeout=60,prepare_timeout=5`, '--shutdown-timeout', '3', '--monitor-interval', '0.1'];

let cluster: TemporalCluster;
let conn: Connection;
const agents: Agent[] = [];
/** Heartbeat watchers (watchHeartbeats) still looking: stopped after the file, also on failure. */
const watchers: { stop(): Promise<number> }[] = [];

beforeAll(async () => {
  const t = Date.now();
  cluster = await startTemporalCluster();
  conn = await Connection.connect({ address: cluster.address });
  console.log(`cluster up (PostgreSQL, schemas, 4 services, namespace, telastic setup) in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}, 240_000);
afterAll(async () => {
  await Promise.all(watchers.map((w) => w.stop()));
  await stopAll(agents);
  await conn?.close();
  await cluster?.destroy();
});

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Two `telastic run` agents (coordinator on them unless `extra` says otherwise) running one job at world size 2. */
async function runningJob(name: string, extra: string[] = []) {
  const out = tmpDir(name);
  const job = uniqueJobId(name);
  const pair = ['a', 'b'].map((n) => startAgent(cluster.address, `${name}-${n}`, ['--nnodes', '2', '--rdzv-id', job, ...CONF, ...extra, WORKER, '--out', out]));
  agents.push(...pair);
  const running = await waitForRound(conn, job, (s) => s.worldSize === 2, 90_000);
  await waitFor('2 workers', () => recordedPids(out, running.round).length === 2);
  return { out, job, pair, running, pids: recordedPids(out, running.round) };
}

/** The latest heartbeat the server accepted from each of the job's running node activities (ms since epoch), by activity. */
async function heartbeats(job: string): Promise<Map<string, number>> {
  const describe = (workflowId: string) => conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.describeWorkflowExecution({ namespace: cluster.namespace, execution: { workflowId } }));
  const top = await describe(job);
  // The node activities run in the job's group child workflows (runGroup).
  const children = await Promise.all((top.pendingChildren ?? []).map(async (c) => ({ id: c.workflowId!, d: await describe(c.workflowId!) })));
  const runs = [{ id: job, d: top }, ...children];
  return new Map(runs.flatMap(({ id, d }) => (d.pendingActivities ?? []).filter((a) => a.lastHeartbeatTime?.seconds)
    .map((a): [string, number] => [`${id}/${a.activityId}`, Number(a.lastHeartbeatTime!.seconds) * 1000 + Math.floor((a.lastHeartbeatTime!.nanos ?? 0) / 1e6)])));
}

/**
 * Looks at the job's heartbeats as the server records them, every 250 ms, through an outage (a
 * look that fails, as it does while history or PostgreSQL is down, is skipped). `longestGap` is
 * the longest time between two heartbeats of a node the server accepted: what the job's heartbeat
 * timeout is measured against.
 */
function watchHeartbeats(job: string) {
  const last = new Map<string, number>();
  let longestGap = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const [id, t] of (await heartbeats(job).catch(() => null)) ?? []) {
        const prev = last.get(id);
        if (prev !== undefined && t > prev) longestGap = Math.max(longestGap, t - prev);
        last.set(id, t);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const watcher = {
    /** Until both nodes have a heartbeat accepted after `since`; when the later of the two was. */
    async acceptedAfter(since: number): Promise<number> {
      const times = await waitFor('both nodes\' heartbeats accepted again', () => {
        const t = [...last.values()];
        return t.length === 2 && t.every((x) => x > since) ? t : null;
      }, 60_000, 100);
      return Math.max(...times);
    },
    async stop(): Promise<number> {
      stopped = true;
      await loop;
      return longestGap;
    },
  };
  watchers.push(watcher);
  return watcher;
}

/** The job ends as it began: the same round, no restart, the same workers, every agent exits 0. */
async function expectUntouched(j: Awaited<ReturnType<typeof runningJob>>): Promise<void> {
  expect(await status(conn, j.job)).toMatchObject({ state: 'running', round: j.running.round, restarts: 0, worldSize: 2 });
  expect(j.pids.filter(alive)).toEqual(j.pids);
  finish(j.out);
  expect(await Promise.all(j.pair.map((a) => a.exited))).toEqual([0, 0]);
  expect(await status(conn, j.job)).toMatchObject({ state: 'succeeded', round: j.running.round, restarts: 0 });
  expect([...recordedEnvs(j.out).keys()].every((k) => k.startsWith(`${j.running.round}.`))).toBe(true);
}

test('the cluster: four server processes, the namespace set up by `telastic setup`; a second run finds everything', async () => {
  const pids = SERVICES.map((s) => cluster.pid(s));
  expect(new Set(pids).size).toBe(4);
  expect(pids.every((p) => p !== undefined && alive(p))).toBe(true);
  expect(cluster.setupOutput).toMatch(/^namespace default: retention 24h\n/);
  expect(cluster.setupOutput.match(/: registered$/gm)).toHaveLength(4);
  const again = await runTelastic(['setup', '--address', cluster.address]);
  expect(again).toMatchObject({ code: 0, stderr: '' });
  expect(again.stdout.match(/: already registered$/gm)).toHaveLength(4);
});

test('a `telastic run` job finishes, and SQL visibility finds it by telastic\'s search attributes', async () => {
  const j = await runningJob('run');
  finish(j.out);
  expect(await Promise.all(j.pair.map((a) => a.exited))).toEqual([0, 0]);
  expect(await status(conn, j.job)).toMatchObject({ state: 'succeeded', restarts: 0 });
  const client = new Client({ connection: conn });
  const query = `WorkflowId = "${j.job}" AND TelasticState = "succeeded" AND TelasticRestarts = 0`;
  await waitFor('the job in visibility', async () => (await client.workflow.count(query)).count === 1, 30_000);
});

test('a pool job (a controller and two pool agents) finishes', async () => {
  const pool = testPool('cluster-pool', agents, [path.dirname(WORKER)], cluster.address);
  pool.controller();
  for (const n of ['cpool-n1', 'cpool-n2']) pool.agent(n, ['--nproc', '1']);
  await waitFor('2 free nodes', async () => Object.values(owners(await poolState(conn, pool.name))).filter((o) => o === 'free').length === 2, 60_000);
  const out = tmpDir('cluster-pool-job');
  const jobId = uniqueJobId('cluster-pool-job');
  await submitJob({ connection: conn, taskQueue: pool.taskQueue }, {
    jobId, pool: pool.name, minNodes: 2, maxNodes: 2, nprocPerNode: 1,
    entrypoint: { script: WORKER, args: ['--out', out] },
    rdzv: { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_S * 1000, lastCallTimeoutMs: 1000, prepareTimeoutMs: 5000 }, shutdownTimeoutMs: 3000,
  });
  await waitForRound(conn, jobId, (s) => s.worldSize === 2, 90_000);
  await waitFor('2 workers', () => recordedPids(out).length === 2);
  finish(out);
  await expect(new Client({ connection: conn }).workflow.getHandle(jobId).result()).resolves.toMatchObject({ restarts: 0 });
  await waitFor('the nodes free again', async () => Object.values(owners(await poolState(conn, pool.name))).filter((o) => o === 'free').length === 2, 30_000);
});

test('kill -9 of the history service mid-job, started again on its ports: no training restart', async () => {
  const j = await runningJob('history');
  const watch = watchHeartbeats(j.job);
  await watch.acceptedAfter(0);
  const before = cluster.pid('history');
  const killed = Date.now();
  await cluster.kill('history');
  await cluster.start('history');
  const serving = Date.now();
  expect(cluster.pid('history')).not.toBe(before);
  const back = await watch.acceptedAfter(killed);
  const gap = await watch.stop();
  console.log(`history kill -9 → SERVING again ${seconds(serving - killed)} (of which 5 s the server's own wait after acquiring its shards); → both nodes' heartbeats accepted ${seconds(back - killed)}; longest gap between a node's accepted heartbeats ${seconds(gap)} (heartbeat timeout ${HEARTBEAT_TIMEOUT_S} s)`);
  expect(gap).toBeLessThan(HEARTBEAT_TIMEOUT_S * 1000);
  await expectUntouched(j);
});

test('PostgreSQL stopped and started again mid-job: no training restart', async () => {
  const j = await runningJob('postgres');
  const watch = watchHeartbeats(j.job);
  await watch.acceptedAfter(0);
  const stopped = Date.now();
  await cluster.postgres.stop();
  await cluster.postgres.start();
  const up = Date.now();
  const back = await watch.acceptedAfter(up);
  const gap = await watch.stop();
  console.log(`PostgreSQL stop → accepting connections again ${seconds(up - stopped)}; → both nodes' heartbeats accepted ${seconds(back - stopped)}; longest gap between a node's accepted heartbeats ${seconds(gap)} (heartbeat timeout ${HEARTBEAT_TIMEOUT_S} s)`);
  expect(gap).toBeLessThan(HEARTBEAT_TIMEOUT_S * 1000);
  await expectUntouched(j);
});

test('two controllers: kill -9 of the one running the job\'s workflow, and the other carries the job to its end', async () => {
  const queue = `tq-${uniqueJobId('controllers')}`;
  const controllers = ['ctl-1', 'ctl-2'].map((n) => startTelastic(n, ['controller', '--address', cluster.address, '--task-queue', queue]));
  agents.push(...controllers);
  const j = await runningJob('controllers', ['--no-coordinator', '--task-queue', queue]);
  const ran = await lastWorkflowTaskIdentity(j.job);
  const victim = controllers.find((c) => ran.endsWith(`-${c.proc.pid}`));
  expect(victim).toBeDefined(); // the workflow ran on one of the two controllers
  const other = controllers.find((c) => c !== victim)!;
  victim!.proc.kill('SIGKILL');
  await victim!.exited;
  await expectUntouched(j); // the job's end is a workflow task: the survivor ran it
  expect(await lastWorkflowTaskIdentity(j.job)).toMatch(new RegExp(`^controller-.*-${other.proc.pid}$`));
  expect(other.proc.exitCode).toBeNull();
});

/** The identity (controller-HOST-PID) of the worker that started the job workflow's latest workflow task. */
async function lastWorkflowTaskIdentity(job: string): Promise<string> {
  const history = await new Client({ connection: conn }).workflow.getHandle(job).fetchHistory();
  const started = (history.events ?? []).filter((e) => e.workflowTaskStartedEventAttributes);
  return started.at(-1)?.workflowTaskStartedEventAttributes?.identity ?? '';
}
