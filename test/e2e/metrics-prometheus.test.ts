/**
 * Metrics end to end: a real Prometheus (Debian's 2.42, scripts/setup-prometheus.sh) scrapes a
 * controller and four `telastic run` agents every second; the test asks its HTTP API what it
 * saw while two agents are killed with SIGKILL. And /healthz, /readyz of a controller before
 * its Temporal server is up, while it serves, and after the server stops.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/temporal/ports';
import { startPrivateServer, stopPrivateServers, testAddress } from '../setup/temporal';
import { dashboardQueries, metricsOf, withVariables } from '../../test-support/dashboard';
import { submitJob } from '../../src/client/pool';
import { FAST_RDZV, ROOT, WORKER, e2eSuite, finish, startAgent, startTelastic, testPool, tmpDir, uniqueJobId, waitFor } from './harness';

const e2e = e2eSuite();
const agents = e2e.agents;
let prometheus: ChildProcess | undefined;

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill('SIGTERM');
    await new Promise((r) => prometheus!.once('exit', r));
  }
  await stopPrivateServers();
});

interface Sample { metric: Record<string, string>; value: [number, string] }

async function startPrometheus(targets: string[]): Promise<string> {
  const bin = execFileSync('bash', [path.join(ROOT, 'scripts', 'setup-prometheus.sh')], { encoding: 'utf8' }).trim();
  const dir = tmpDir('prometheus');
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(config, [
    'global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}',
    'scrape_configs:',
    '  - job_name: telastic',
    `    static_configs: [{targets: [${targets.map((t) => `"${t}"`).join(', ')}]}]`,
    '',
  ].join('\n'));
  const port = await freePort();
  prometheus = spawn(path.join(bin, 'prometheus'), [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('prometheus ready', () => fetch(`${url}/-/ready`).then((r) => r.ok, () => false), 30_000);
  return url;
}

async function query(prom: string, q: string): Promise<{ status: string; data: { result: Sample[] }; error?: string }> {
  const res = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(q)}`);
  return (await res.json()) as { status: string; data: { result: Sample[] }; error?: string };
}

/** Waits until the query's single answer has `value`; returns the API's answer as it came. */
async function waitForValue(prom: string, q: string, value: (v: number) => boolean, timeoutMs = 60_000) {
  return waitFor(`${q} in Prometheus`, async () => {
    const r = await query(prom, q);
    return r.data.result.length === 1 && value(Number(r.data.result[0].value[1])) ? r : null;
  }, timeoutMs, 500);
}

const get = (url: string) => fetch(url).then(async (r) => ({ code: r.status, body: await r.text() }), () => ({ code: 0, body: '' }));

test('/readyz: 503 before the server is reachable, 200 once the controller polls, 503 after the server stops; /healthz 200 throughout', async () => {
  const serverPort = await freePort();
  const metricsPort = await freePort();
  const c = startTelastic('ready-controller', ['controller', '--address', `127.0.0.1:${serverPort}`, '--task-queue', `tq-${uniqueJobId('ready')}`, '--metrics-port', String(metricsPort), '--metrics-host', '127.0.0.1']);
  agents.push(c);
  const base = `http://127.0.0.1:${metricsPort}`;
  await waitFor('healthz', async () => (await get(`${base}/healthz`)).code === 200, 30_000);
  expect(await get(`${base}/readyz`)).toEqual({ code: 503, body: 'not ready: not connected to Temporal yet\n' });

  const server = await startPrivateServer({ port: serverPort });
  // The controller waits out the missing server with backoff, then starts its workers: generous.
  let said = '';
  const ready = await waitFor('readyz 200', async () => {
    const r = await get(`${base}/readyz`);
    said = `${r.code} ${r.body.trim()}`;
    return r.code === 200 ? r : null;
  }, 120_000).catch((err: Error) => {
    throw new Error(`${err.message}; /readyz last said ${said}; the controller:\n${c.output().trim().split('\n').slice(-8).join('\n')}`);
  });
  expect(ready).toEqual({ code: 200, body: 'ready\n' });

  await server.stop();
  const down = await waitFor('readyz 503', async () => {
    const r = await get(`${base}/readyz`);
    return r.code === 503 ? r : null;
  }, 30_000);
  expect(down.body).toMatch(/^not ready: Temporal unreachable: .+\n$/);
  expect((await get(`${base}/healthz`)).code).toBe(200);
}, 240_000);

test('Prometheus sees a 4-node job at world size 4, then 2 after kill -9 of two agents; restarts by cause, recovery, and every dashboard query', async () => {
  const job = uniqueJobId('prom');
  const out = tmpDir('prom');
  const tq = `tq-${job}`;
  const ports = await Promise.all([0, 1, 2, 3, 4].map(() => freePort()));
  const [controllerPort, ...agentPorts] = ports;
  const metrics = (port: number) => ['--metrics-port', String(port), '--metrics-host', '127.0.0.1'];
  const prom = await startPrometheus(ports.map((p) => `127.0.0.1:${p}`));

  agents.push(startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', tq, ...metrics(controllerPort)], { TELASTIC_METRICS_INTERVAL: '1' }));
  const nodes = agentPorts.map((port, i) => {
    const args = ['--nnodes', '2:4', '--nproc-per-node', '1', '--max-restarts', '3', '--rdzv-id', job, '--no-coordinator', '--task-queue', tq, ...metrics(port), ...FAST_RDZV, WORKER, '--out', out];
    return startAgent(testAddress(), `${job}-n${i}`, args);
  });
  agents.push(...nodes);
  const sel = `job_id="${job}"`;

  const four = await waitForValue(prom, `telastic_job_world_size{${sel}}`, (v) => v === 4, 90_000);
  expect(four.data.result[0].metric).toMatchObject({ job: 'telastic', job_id: job });
  expect(four.data.result[0].metric.pool).toBeUndefined(); // a run job's empty pool label: none in Prometheus
  await waitForValue(prom, `telastic_job_state{${sel},state="running"}`, (v) => v === 1);
  await waitForValue(prom, `sum(telastic_agent_workers_running{node=~"${job}-n.*"})`, (v) => v === 4);
  const roundBefore = Number((await query(prom, `telastic_job_round{${sel}}`)).data.result[0].value[1]);

  for (const victim of nodes.slice(2)) victim.proc.kill('SIGKILL');
  const two = await waitForValue(prom, `telastic_job_world_size{${sel}}`, (v) => v === 2, 90_000);
  console.log(`world size after kill -9 of two agents: ${JSON.stringify(two)}`);
  const victims = agentPorts.slice(2).map((p) => `127.0.0.1:${p}`);
  for (const instance of victims) await waitForValue(prom, `up{instance="${instance}"}`, (v) => v === 0);
  const round = await waitForValue(prom, `telastic_job_round{${sel}}`, (v) => v > roundBefore);
  const restarts = await waitForValue(prom, `sum(telastic_job_restarts_total{${sel},cause="node_lost"})`, (v) => v >= 1);
  const recovery = await waitForValue(prom, `sum(telastic_job_recovery_seconds_count{${sel}})`, (v) => v >= 1);
  const recoverySum = await query(prom, `sum(telastic_job_recovery_seconds_sum{${sel}})`);
  console.log(`after the kill: ${JSON.stringify({ round: round.data.result, restarts: restarts.data.result, recoveries: recovery.data.result, recoverySecondsSum: recoverySum.data.result })}`);
  // A node lost to a missed heartbeat (3 s here) is back to running within that and a round.
  expect(Number(recoverySum.data.result[0].value[1])).toBeGreaterThan(0);
  expect(Number(recoverySum.data.result[0].value[1]) / Number(recovery.data.result[0].value[1])).toBeLessThan(30);
  await waitForValue(prom, `sum(telastic_agent_workers_running{node=~"${job}-n.*"})`, (v) => v === 2);
  await waitForValue(prom, `telastic_job_goodput_ratio{${sel}}`, (v) => v > 0 && v < 1);

  // The dashboard's temporal_* names are ones this SDK exports, and Prometheus evaluates every query.
  const sdkNames = dashboardQueries().flatMap(metricsOf).filter((n) => n.startsWith('temporal_'));
  await waitFor('the SDK\'s series the dashboard reads', async () => {
    const have = new Set((await query(prom, 'count by (__name__) ({__name__=~"temporal_.+"})')).data.result.map((s) => s.metric.__name__));
    const missing = sdkNames.filter((n) => !have.has(n));
    return missing.length === 0 ? true : null;
  }, 30_000);
  for (const q of dashboardQueries().filter((x) => !x.startsWith('label_values('))) {
    const r = await query(prom, withVariables(q));
    expect({ q, status: r.status, error: r.error }).toEqual({ q, status: 'success', error: undefined });
  }

  finish(out);
  expect(await Promise.all(nodes.slice(0, 2).map((a) => a.exited))).toEqual([0, 0]);
}, 240_000);

/** One series' value from a /metrics page, or undefined when the page lacks it. */
async function scraped(url: string, series: string): Promise<number | undefined> {
  const page = await fetch(url).then((r) => r.text(), () => '');
  const line = page.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('a pool: its nodes by state and a job waiting for nodes, from the controller\'s /metrics; an agent\'s own series and /readyz', async () => {
  const pool = testPool('mpool', agents, [path.dirname(WORKER)]);
  const [controllerPort, ...agentPorts] = await Promise.all([0, 1, 2, 3].map(() => freePort()));
  const metrics = (port: number) => ['--metrics-port', String(port), '--metrics-host', '127.0.0.1'];
  agents.push(startTelastic(`${pool.name}-controller`, ['controller', '--address', testAddress(), '--task-queue', pool.taskQueue, ...metrics(controllerPort)], { TELASTIC_METRICS_INTERVAL: '1' }));
  const page = `http://127.0.0.1:${controllerPort}/metrics`;
  const nodes = (state: string) => scraped(page, `telastic_pool_nodes{pool="${pool.name}",state="${state}"}`);
  for (const [i, port] of agentPorts.slice(0, 2).entries()) pool.agent(`${pool.name}-n${i}`, ['--nproc', '1', ...metrics(port)]);
  await waitFor('2 free nodes', async () => (await nodes('free')) === 2);

  const out = tmpDir('mpool');
  const spec = { jobId: uniqueJobId('mpool'), pool: pool.name, minNodes: 3, maxNodes: 3, nprocPerNode: 1, maxRestarts: 0, entrypoint: { script: WORKER, args: ['--out', out] }, rdzv: { heartbeatTimeoutMs: 3000, lastCallTimeoutMs: 1000, joinTimeoutMs: 60_000, prepareTimeoutMs: 3000 }, shutdownTimeoutMs: 3000 };
  await submitJob({ connection: e2e.conn, taskQueue: pool.taskQueue }, spec);
  await waitFor('a job waiting for a third node', async () => (await scraped(page, `telastic_pool_jobs_waiting{pool="${pool.name}"}`)) === 1);

  pool.agent(`${pool.name}-n2`, ['--nproc', '1', ...metrics(agentPorts[2])]);
  await waitFor('the job running on 3 granted nodes', async () => (await scraped(page, `telastic_job_world_size{job_id="${spec.jobId}",pool="${pool.name}"}`)) === 3);
  // The pool's status is sampled apart from the job's, so it may show the grant a sample later.
  await waitFor('3 granted nodes and none free', async () => (await nodes('granted')) === 3 && (await nodes('free')) === 0);
  await waitFor('no job waiting', async () => (await scraped(page, `telastic_pool_jobs_waiting{pool="${pool.name}"}`)) === 0);

  const agent = `http://127.0.0.1:${agentPorts[0]}`;
  await waitFor('the agent runs its worker', async () => (await scraped(`${agent}/metrics`, `telastic_agent_workers_running{node="${pool.name}-n0"}`)) === 1);
  const age = await scraped(`${agent}/metrics`, `telastic_agent_contact_age_seconds{node="${pool.name}-n0"}`);
  expect(age).toBeLessThan(5); // it polls its pool every second
  expect(await get(`${agent}/readyz`)).toEqual({ code: 200, body: 'ready\n' });
  finish(out);
});
