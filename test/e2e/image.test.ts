/**
 * The telastic image, built by a real dockerd from the repository's Dockerfile on the local Node
 * base (its BASE build argument): its size, that it runs as a non-root user with tini as PID 1,
 * a job run from it against the suite's Temporal, and `docker stop` reaching telastic through
 * tini (the workers get SIGTERM and the container ends on its own, not by SIGKILL).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startDocker, type TestDocker } from '../setup/docker';
import { buildTelasticImage, type Built } from '../setup/images';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, tmpDir, uniqueJobId, waitFor } from './harness';

jest.setTimeout(30 * 60_000);

let d: TestDocker;
let built: Built;
const containers: string[] = [];

beforeAll(async () => {
  d = await startDocker();
  built = await buildTelasticImage(d);
  console.log(`image ${built.tag}: ${(built.bytes / 1e6).toFixed(0)} MB, built in ${built.seconds.toFixed(1)} s`);
});

afterAll(async () => {
  if (!d) return;
  if (containers.length) await d.docker(['rm', '-f', ...containers]);
  await d.stop();
});

/** A stand-in worker for `--no-python`: records its rank and uid, and whether SIGTERM reached it. */
function workerScript(dir: string, sleep: boolean): string {
  const file = path.join(dir, sleep ? 'sleeper.sh' : 'worker.sh');
  writeFileSync(file, [
    '#!/bin/sh',
    'out=/work/out',
    `echo "$RANK/$WORLD_SIZE uid=$(id -u)" > "$out/rank.$RANK"`,
    ...(sleep ? ['trap \'echo term > "$out/term.$RANK"; exit 0\' TERM', 'while :; do sleep 1; done'] : []),
    '',
  ].join('\n'), { mode: 0o755 });
  return `/work/${path.basename(file)}`;
}

/** A directory the image's user (uid 10001) can write: the tests' tmp dirs are root's. */
function sharedDir(name: string): string {
  const dir = tmpDir(name);
  mkdirSync(path.join(dir, 'out'));
  for (const d of [dir, path.join(dir, 'out')]) chmodSync(d, 0o777);
  return dir;
}

test('the image is small, non-root, with tini as PID 1 and telastic\'s --help as its default', async () => {
  // A generous bound that catches a build gone wrong (dev dependencies, the .venv, lib twice).
  expect(built.bytes).toBeLessThan(600e6);
  const help = await d.must(['run', '--rm', built.tag]);
  expect(help).toMatch(/^Usage: telastic /m);
  expect(help).toMatch(/\bcontroller\b/);
  const who = await d.must(['run', '--rm', '--entrypoint', 'id', built.tag]);
  expect(who.trim()).toBe('uid=10001(telastic) gid=10001(telastic) groups=10001(telastic)');
});

test('a two-rank job runs from the image against the suite\'s Temporal', async () => {
  const dir = sharedDir('image-job');
  const script = workerScript(dir, false);
  const job = uniqueJobId('image');
  const name = `telastic-job-${process.pid}`;
  containers.push(name);
  // Its own node id and task queue: nothing else on the suite's server takes its tasks, and it
  // takes no one else's. Bounded well below docker()'s own 10 min, and its output kept.
  const r = await d.docker(['run', '--name', name, '--network', 'host', '-v', `${dir}:/work`, built.tag,
    'run', '--rdzv-endpoint', testAddress(), '--rdzv-id', job, '--node-id', `image-${process.pid}`, '--task-queue', `image-${process.pid}`,
    '--local-addr', '127.0.0.1', '--nnodes', '1', '--nproc-per-node', '2', ...FAST_RDZV, '--no-python', script], { timeoutMs: 180_000 });
  if (r.code !== 0) console.log(`the job's container exited ${r.code}:\n${r.stderr}\n${(await d.docker(['logs', '--tail', '50', name])).stderr}`);
  expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr.trim().split('\n').slice(-10).join('\n') }).toEqual({ code: 0, stderr: '' });
  expect(r.stderr).toMatch(/succeeded/);
  const ranks = [0, 1].map((rank) => readFileSync(path.join(dir, 'out', `rank.${rank}`), 'utf8').trim());
  expect(ranks).toEqual(['0/2 uid=10001', '1/2 uid=10001']);
});

test('docker stop: SIGTERM reaches telastic through tini, its workers stop, and the container ends on its own', async () => {
  const dir = sharedDir('image-stop');
  const script = workerScript(dir, true);
  const job = uniqueJobId('image-stop');
  const name = `telastic-stop-${process.pid}`;
  containers.push(name);
  const args = ['run', '--rdzv-endpoint', testAddress(), '--rdzv-id', job, '--node-id', `image-stop-${process.pid}`, '--task-queue', `image-stop-${process.pid}`,
    '--local-addr', '127.0.0.1', '--nnodes', '1', '--nproc-per-node', '1', ...FAST_RDZV, '--no-python', script];
  await d.must(['run', '-d', '--name', name, '--network', 'host', '-v', `${dir}:/work`, built.tag, ...args]);
  await waitFor('the worker to start in the container', () => existsSync(path.join(dir, 'out', 'rank.0')), 120_000);
  const pid1 = await d.must(['exec', name, 'cat', '/proc/1/cmdline']);
  expect(pid1.split('\0').filter(Boolean)).toEqual(['tini', '--', 'node', '/opt/telastic/bin/telastic.js', ...args]);
  const t0 = Date.now();
  await d.must(['stop', '--time', '30', name]);
  const stopSeconds = (Date.now() - t0) / 1000;
  const state = JSON.parse(await d.must(['inspect', '--format', '{{json .State}}', name])) as { ExitCode: number; OOMKilled: boolean };
  console.log(`docker stop: ${stopSeconds.toFixed(1)} s, exit code ${state.ExitCode}`);
  expect(existsSync(path.join(dir, 'out', 'term.0'))).toBe(true); // the worker got SIGTERM
  expect(state.ExitCode).not.toBe(137); // not SIGKILLed at the end of docker stop's 30 s
  expect(stopSeconds).toBeLessThan(30);
});
