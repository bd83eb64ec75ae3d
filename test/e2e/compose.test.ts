/**
 * `docker compose up` with the repository's docker-compose.yml, for real: a private dockerd
 * (test/setup/docker.ts), the telastic image built from the Dockerfile, and an override that
 * swaps Docker Hub's images for locally built ones of the same software (test/setup/images.ts).
 * The override changes nothing else but the published port (a free one, on 127.0.0.1), a
 * directory for the workers' output, and the Web UI, which has no stand-in and is not started.
 *
 * Then, from the host: a pool job submitted with `telastic submit` runs on two agent containers;
 * `docker kill` of one → the job goes on without it; `docker compose down -v` leaves no container,
 * network or volume of the project.
 */
import { chmodSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort } from '../../src/temporal/ports';
import { startDocker, type TestDocker } from '../setup/docker';
import { buildStandIns, buildTelasticImage, TELASTIC_IMAGE } from '../setup/images';
import { poolState, ROOT, status, tmpDir, uniqueJobId, waitFor } from './harness';
import { runTelastic } from '../../test-support/agents';

jest.setTimeout(40 * 60_000);

const project = `telastic-compose-${process.pid}`;
let d: TestDocker;
let dir = '';
let compose: (args: string[], timeoutMs?: number) => Promise<string>;
let composeArgs: (args: string[]) => string[];
let composeEnv: { cwd: string; env: NodeJS.ProcessEnv };
let conn: Connection | undefined;
let address = '';

beforeAll(async () => {
  d = await startDocker();
  await buildTelasticImage(d);
  await buildStandIns(d);
  dir = tmpDir('compose');
  const train = path.join(dir, 'train');
  const out = path.join(dir, 'out');
  for (const p of [train, out]) mkdirSync(p);
  chmodSync(out, 0o777); // the agents run as uid 10001
  // A stand-in worker (the image has no Python): says it started, then runs until told to finish.
  writeFileSync(path.join(train, 'worker.sh'), [
    '#!/bin/sh',
    'touch "/srv/out/started.$TORCHELASTIC_RESTART_COUNT.$GROUP_RANK.$RANK.$(hostname)"',
    'while [ ! -f /srv/out/finish ]; do sleep 0.2; done',
    '',
  ].join('\n'), { mode: 0o755 });
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  writeFileSync(path.join(dir, 'override.yml'), `# The compose test's changes to docker-compose.yml (test/e2e/compose.test.ts).
services:
  temporal:
    ports: !override
      - "${address}:7233"
  temporal-ui:
    profiles: ["ui"]   # no local stand-in for temporalio/ui: not started here
  setup:
    image: ${TELASTIC_IMAGE}
    build: !reset null
  controller:
    image: ${TELASTIC_IMAGE}
  agent:
    image: ${TELASTIC_IMAGE}
    volumes:
      - ${out}:/srv/out
`);
  const env = { TELASTIC_TRAIN_DIR: train, COMPOSE_PROJECT_NAME: project };
  composeArgs = (args) => ['compose', '-f', path.join(ROOT, 'docker-compose.yml'), '-f', path.join(dir, 'override.yml'), '--profile', 'pool', ...args];
  composeEnv = { cwd: ROOT, env };
  compose = (args, timeoutMs = 10 * 60_000) => d.must(composeArgs(args), { ...composeEnv, timeoutMs });
});

afterAll(async () => {
  await conn?.close();
  if (d) {
    if (compose) await compose(['down', '-v', '--remove-orphans', '--timeout', '5']).catch(() => undefined);
    await d.stop();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** What the project still has in the daemon, by kind. */
async function leftovers(): Promise<Record<'containers' | 'networks' | 'volumes', string[]>> {
  const label = `label=com.docker.compose.project=${project}`;
  const ids = async (args: string[]) => (await d.must([...args, '--filter', label, '-q'])).split('\n').filter(Boolean);
  return { containers: await ids(['ps', '-a']), networks: await ids(['network', 'ls']), volumes: await ids(['volume', 'ls']) };
}

test('compose up brings the stack up healthy; a pool job runs on two agent containers, goes on without a killed one, and down -v leaves nothing', async () => {
  const t0 = Date.now();
  try {
    await compose(['up', '-d', '--wait', '--pull', 'never', '--scale', 'agent=2']);
  } catch (err) {
    const logs = await d.docker(composeArgs(['logs', '--tail', '8', '--no-color']), composeEnv); // compose() would throw on a failed stack
    throw new Error(`${(err as Error).message}\n--- docker compose logs:\n${logs.stdout}`, { cause: err });
  }
  const ps = await compose(['ps', '-a', '--format', '{{.Service}}\t{{.State}}\t{{.Status}}']);
  console.log(`docker compose up: ${((Date.now() - t0) / 1000).toFixed(1)} s\n${ps}`);
  const states = ps.trim().split('\n').map((l) => l.split('\t')).map(([service, state, st]) => `${service} ${state}${/healthy/.test(st) ? ' healthy' : ''}${/Exited \(0\)/.test(st) ? ' exit 0' : ''}`).sort();
  expect(states).toEqual([
    'agent running', 'agent running', 'controller running', 'ledger-db running healthy', 'postgresql running healthy',
    'setup exited exit 0', 'temporal running healthy', 'temporal-namespace exited exit 0', 'temporal-schema exited exit 0',
  ]);
  const setupLog = await compose(['logs', '--no-color', '--no-log-prefix', 'setup']);
  expect(setupLog).toMatch(/namespace default/);

  // From the host, as a user would: the CLI against the published frontend.
  const job = uniqueJobId('compose');
  const submitted = await runTelastic(['submit', '--pool', 'gpu', '--address', address, '--nnodes', '1:2', '--nproc-per-node', '1', '--max-restarts', '3',
    '--rdzv-id', job, '--rdzv-conf', 'heartbeat_timeout=5,last_call_timeout=1,join_timeout=120,prepare_timeout=5', '--no-python', '/srv/train/worker.sh']);
  expect({ code: submitted.code, stderr: submitted.stderr.trim() }).toEqual({ code: 0, stderr: '' });
  expect(submitted.stdout.trim()).toBe(job);
  conn = await Connection.connect({ address });
  const c = conn;
  const two = await waitFor('the job on both agents', async () => {
    const s = await status(c, job).catch(() => null);
    return s?.state === 'running' && s.worldSize === 2 ? s : null;
  }, 180_000);
  const out = path.join(dir, 'out');
  await waitFor('both workers started', () => readdirSync(out).filter((f) => f.startsWith('started.')).length === 2, 60_000);

  const agents = (await compose(['ps', '-q', 'agent'])).split('\n').filter(Boolean);
  expect(agents).toHaveLength(2);
  const victim = agents[0];
  const victimHost = (await d.must(['inspect', '--format', '{{.Config.Hostname}}', victim])).trim();
  await d.must(['kill', victim]);
  const one = await waitFor('the job going on without the killed agent', async () => {
    const s = await status(c, job).catch(() => null);
    return s?.state === 'running' && s.worldSize === 1 && s.round > two.round ? s : null;
  }, 180_000);
  expect(one.lastFailure?.rank ?? null).toBeNull(); // a lost node, not a worker's exit
  console.log(`after docker kill of ${victimHost}: ${JSON.stringify({ round: one.round, worldSize: one.worldSize, restarts: one.restarts, lastFailure: one.lastFailure })}`);
  await waitFor('the survivor\'s worker restarted', () => readdirSync(out).some((f) => f.startsWith('started.') && !f.endsWith(`.${victimHost}`) && !f.startsWith('started.0.')), 60_000);

  writeFileSync(path.join(out, 'finish'), '');
  const done = await waitFor('the job to succeed', async () => {
    const s = await status(c, job).catch(() => null);
    return s && s.state !== 'running' && s.state !== 'rendezvous' && s.state !== 'restarting' ? s : null;
  }, 120_000).catch(async (err: Error) => {
    const r = await runTelastic(['status', job, '--address', address]);
    throw new Error(`${err.message}\n${r.stdout}${r.stderr}`);
  });
  expect(done.state).toBe('succeeded');
  // The pool takes the survivor back: free, serving no job.
  const survivor = one.nodes.find((n) => n.state === 'running' || n.state === 'succeeded')?.nodeId;
  let pool = '';
  await waitFor('the survivor free in the pool', async () => {
    const p = await poolState(c, 'gpu').catch(() => null);
    pool = JSON.stringify(p?.nodes.map((n) => [n.nodeId, n.state, n.jobId]));
    return p?.nodes.some((n) => n.nodeId === survivor && n.state === 'free' && n.jobId === null) ?? null;
  }, 60_000).catch(async (err: Error) => {
    throw new Error(`${err.message}: pool nodes ${pool}\n${await compose(['logs', '--no-color', '--tail', '12', '--timestamps', 'agent', 'controller'])}`);
  });
  // And the agent itself knows it (its next poll, within a second or so): a stop before that
  // would find it still granted, and with the controller stopping beside it, it would wait out
  // its leave (the shutdown timeout + 5 s) for a pool that cannot answer.
  await waitFor('the survivor to see itself free', async () => {
    const logs = await compose(['logs', '--no-color', 'agent']);
    const granted = logs.lastIndexOf(`node ${survivor}: granted to job ${job}`);
    return (granted >= 0 && logs.indexOf(`node ${survivor}: free`, granted) > granted) || null;
  }, 30_000, 500).catch(async (err: Error) => {
    throw new Error(`${err.message} (node ${survivor}):\n${await compose(['logs', '--no-color', '--tail', '30', '--timestamps', 'agent'])}`);
  });
  await conn.close();
  conn = undefined;

  // SIGTERM ends every long-running telastic container on its own (tini passes it on), inside
  // its stop_grace_period; one still running at the end of it would be SIGKILLed (137). Stopped
  // together, as `down` does: the free agent leaves without waiting for the controller.
  const t1 = Date.now();
  await compose(['stop', 'controller', 'agent']);
  const stopped = await Promise.all(['controller', 'agent'].map(async (service) => {
    const ids = (await compose(['ps', '-a', '-q', service])).split('\n').filter(Boolean).filter((id) => id !== victim);
    return Promise.all(ids.map(async (id) => `${service} ${(await d.must(['inspect', '--format', '{{.State.ExitCode}}', id])).trim()}`));
  }));
  console.log(`compose stop of controller and agent: ${((Date.now() - t1) / 1000).toFixed(1)} s: ${stopped.flat().join(', ')}`);
  const killed = stopped.flat().filter((x) => x.endsWith(' 137'));
  if (killed.length) console.log(`SIGKILLed at the end of the grace: ${killed.join(', ')}\n${await compose(['logs', '--no-color', '--tail', '25', '--timestamps', 'agent'])}`);
  expect(killed).toEqual([]);
  await compose(['down', '-v', '--timeout', '10']);
  expect(await leftovers()).toEqual({ containers: [], networks: [], volumes: [] });
});
