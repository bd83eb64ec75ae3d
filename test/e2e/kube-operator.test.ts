/**
 * The operator on the real cluster (test/setup/kube-cluster.ts), installed with the Helm chart:
 * its two replicas (one leads, by the Lease) host the job workflows on a task queue of this file's
 * own, against the suite's Temporal, which pods reach through a forwarder on the bridge's address.
 * A TelasticJob of stand-in workers (test/fixtures/step_worker.js, from a hostPath) goes through
 * what a cluster does to training pods, each step checked against the job's own status:
 *   2 pods → world size 2; `kubectl delete pod` (a preemption notice) → its agent leaves
 *   checkpoint-first, a replacement pod joins, no restart counted; a pod's container SIGKILLed →
 *   one restart, blamed on that pod, a replacement joins; `kubectl scale --replicas 3` → a third
 *   pod joins without a restart, `--replicas 1` → two drained, their pods deleted; deleting the
 *   resource ends the job and leaves no pod. A HorizontalPodAutoscaler drives the scale
 *   subresource up and down by its bounds (this cluster has no metrics API for it to act on a
 *   metric; docs/kubernetes.md, Autoscaling). `kubectl get telasticjobs -w` runs throughout and is
 *   printed with the time of each line.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { getJobStatus } from '../../src/client/api';
import type { JobStatus } from '../../src/job/status';
import { startCluster, type KubeCluster } from '../setup/kube-cluster';
import { run } from '../setup/kube-host';
import { saveTelasticImage } from '../setup/kube-images';
import { testAddress } from '../setup/temporal';
import { e2eSuite, ROOT, tmpDir, waitFor } from './harness';

jest.setTimeout(30 * 60_000);

const e2e = e2eSuite();
const NS = 'train';
const QUEUE = `kube-${process.pid}`;
const CHART = path.join(ROOT, 'charts', 'telastic');
let k: KubeCluster;
let forwarder: net.Server | undefined;
let watch: ChildProcess | undefined;
const watched: string[] = [];
let t0 = Date.now();
/** A directory every pod mounts at /work: the worker script, its output, the checkpoints. */
let shared: string;

/** A TCP forwarder on the bridge's address to the suite's Temporal: pods reach the host there. */
function forward(host: string, upstream: string): Promise<{ server: net.Server; port: number }> {
  const [upHost, upPort] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.slice(upstream.lastIndexOf(':') + 1))];
  const server = net.createServer((client) => {
    const up = net.connect({ host: upHost, port: upPort });
    for (const s of [client, up]) {
      s.setNoDelay(true);
      s.on('error', () => undefined);
      s.on('close', () => { client.destroy(); up.destroy(); });
    }
    client.pipe(up);
    up.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve({ server, port: (server.address() as net.AddressInfo).port }));
  });
}

function helm(args: string[]) {
  const dirs = { HELM_CACHE_HOME: 'helm-cache', HELM_CONFIG_HOME: 'helm-config', HELM_DATA_HOME: 'helm-data' };
  const env = { ...process.env, KUBECONFIG: k.kubeconfig, ...Object.fromEntries(Object.entries(dirs).map(([key, d]) => [key, path.join(k.dir, d)])) };
  return new Promise<string>((resolve, reject) => {
    const child = spawn(k.helm, args, { env });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`helm ${args.join(' ')} exited ${code}: ${out.trim()}`))));
  });
}

const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s`;

beforeAll(async () => {
  const image = await saveTelasticImage(tmpDir('kube-image'));
  k = await startCluster();
  await k.loadImage(image.tarball);
  const fwd = await forward(k.gateway, testAddress());
  forwarder = fwd.server;
  const api = new URL(k.apiServer);
  const values = {
    image: { repository: 'telastic', tag: 'test', pullPolicy: 'Never' },
    temporal: { address: `${k.gateway}:${fwd.port}` },
    controller: {
      replicas: 2,
      taskQueue: QUEUE,
      // No kube-proxy here: the API server's ClusterIP is not routed, its address is.
      env: [{ name: 'KUBERNETES_SERVICE_HOST', value: api.hostname }, { name: 'KUBERNETES_SERVICE_PORT', value: api.port }],
    },
  };
  writeFileSync(path.join(k.dir, 'values.json'), JSON.stringify(values));
  await helm(['install', 'telastic', CHART, '--namespace', 'telastic', '--create-namespace', '--values', path.join(k.dir, 'values.json')]);
  await k.must(['rollout', 'status', '-n', 'telastic', 'deployment/telastic-telastic-controller', '--timeout', '300s'], { timeoutMs: 320_000 });
  await k.must(['create', 'namespace', NS]);
  shared = tmpDir('kube-shared');
  for (const d of ['', 'out', 'ckpt']) {
    mkdirSync(path.join(shared, d), { recursive: true });
    chmodSync(path.join(shared, d), 0o777); // the image's user (uid 10001) writes here
  }
  copyFileSync(path.join(ROOT, 'test', 'fixtures', 'step_worker.js'), path.join(shared, 'step_worker.js'));
  t0 = Date.now();
  watch = spawn('/usr/bin/kubectl', ['--kubeconfig', k.kubeconfig, 'get', 'telasticjobs', '-n', NS, '-w'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let partial = '';
  watch.stdout!.on('data', (c: Buffer) => {
    const lines = (partial + c.toString()).split('\n');
    partial = lines.pop()!;
    for (const l of lines) watched.push(`${elapsed()}  ${l}`);
  });
}, 40 * 60_000);

afterAll(async () => {
  watch?.kill();
  if (watched.length) console.log(`kubectl get telasticjobs -w (seconds since the job was applied):\n${watched.join('\n')}`);
  forwarder?.close();
  await k?.stop();
});

const job = (name: string) => ({
  apiVersion: 'telastic.dev/v1alpha1',
  kind: 'TelasticJob',
  metadata: { name, namespace: NS },
  spec: {
    image: 'telastic:test',
    imagePullPolicy: 'Never',
    noPython: true,
    command: ['node', '/work/step_worker.js', '--out', `/work/out/${name}`, '--step-time', '0.2'],
    nnodes: { min: 1, max: 3 },
    replicas: 2,
    nprocPerNode: 1,
    maxRestarts: 5,
    rdzvConf: { heartbeat_timeout: 3, last_call_timeout: 1, prepare_timeout: 5, join_timeout: 120 },
    checkpoint: { volume: { hostPath: { path: path.join(shared, 'ckpt') } }, mountPath: '/ckpt' },
    volumes: [{ name: 'work', hostPath: { path: shared } }],
    volumeMounts: [{ name: 'work', mountPath: '/work' }],
    terminationGracePeriodSeconds: 20,
  },
});

interface Resource { status?: { jobId?: string; state?: string; worldSize?: number; restarts?: number; lastFailure?: string; replicas?: number } }
const resource = async (name: string) => JSON.parse(await k.must(['get', 'telasticjob', name, '-n', NS, '-o', 'json'])) as Resource;
const podNames = async () => (await k.must(['get', 'pods', '-n', NS, '-o', 'jsonpath={.items[*].metadata.name}'])).trim().split(/\s+/).filter(Boolean).sort();
const jobStatus = (jobId: string): Promise<JobStatus> => getJobStatus({ connection: e2e.conn as Connection }, jobId);
/** The nodes running in the job's current round, by name. */
const running = (s: JobStatus) => s.nodes.filter((n) => n.state === 'running').map((n) => n.nodeId).sort();
/** What a failed wait prints: the pods, the operator's log. */
async function explain(): Promise<string> {
  const pods = (await k.kubectl(['get', 'pods', '-A', '-o', 'wide'])).stdout;
  const op = (await k.kubectl(['logs', '-n', 'telastic', '-l', 'app.kubernetes.io/component=controller', '--tail', '40', '--prefix'])).stdout;
  return `${pods}\n${op}`;
}
async function until<T>(what: string, fn: () => Promise<T>, timeoutMs = 180_000): Promise<Exclude<T, false | '' | 0 | null | undefined>> {
  try {
    return (await waitFor(what, fn, timeoutMs, 250)) as Exclude<T, false | '' | 0 | null | undefined>;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await explain()}`);
  }
}
const checkpoints = () => readdirSync(path.join(shared, 'ckpt')).filter((f) => /^ckpt_\d+\.state$/.test(f)).sort();
const progress = (name: string) => {
  const f = path.join(shared, 'out', name, 'progress.log');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').map((l) => { const [step, world, round, node] = l.split(' '); return { step: Number(step), world: Number(world), round: Number(round), node }; }) : [];
};

describe('a TelasticJob of stand-in workers', () => {
  const name = 'sim';
  let jobId = '';
  const times: string[] = [];
  const timed = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
    const s = Date.now();
    const r = await f();
    times.push(`${what}: ${((Date.now() - s) / 1000).toFixed(1)} s`);
    return r;
  };
  afterAll(() => console.log(`TelasticJob ${name}, what each step took:\n  ${times.join('\n  ')}`));

  test('2 pods, both running, world size 2', async () => {
    await timed('apply → 2 pods running in the job, world size 2', async () => {
      await k.must(['apply', '-f', '-'], { input: JSON.stringify(job(name)) });
      jobId = await until('the operator started the job', async () => (await resource(name)).status?.jobId);
      await until('world size 2', async () => { const s = await jobStatus(jobId).catch(() => null); return s?.state === 'running' && s.worldSize === 2 && s; });
    });
    expect(await podNames()).toEqual([`${name}-0`, `${name}-1`]);
    const s = await jobStatus(jobId);
    expect(running(s)).toEqual([`${name}-0`, `${name}-1`]);
    expect(s.restarts).toBe(0);
    await until('.status mirrors it', async () => { const r = await resource(name); return r.status?.state === 'running' && r.status.worldSize === 2 && r.status.replicas === 2; }, 30_000);
    await until('the workers step', async () => progress(name).length > 5, 60_000);
  });

  test('kubectl delete pod: its agent leaves checkpoint-first, a replacement joins, no restart counted', async () => {
    const before = checkpoints().length;
    await timed(`kubectl delete pod ${name}-0 → ${name}-2 running in the job, world size 2`, async () => {
      await k.must(['delete', 'pod', `${name}-0`, '-n', NS, '--wait=false']);
      await until('the replacement in the job, world size 2', async () => {
        const s = await jobStatus(jobId);
        return s.state === 'running' && s.worldSize === 2 && running(s).join() === [`${name}-1`, `${name}-2`].join() && s;
      });
    });
    const s = await jobStatus(jobId);
    expect(s.restarts).toBe(0);
    expect(s.preemptions?.map((p) => p.nodeId)).toEqual([`${name}-0`]);
    // The checkpoint the leave asked for, and the job went on from it.
    expect(checkpoints().length).toBe(before + 1);
    const saved = JSON.parse(readFileSync(path.join(shared, 'ckpt', checkpoints().at(-1)!), 'utf8')) as { step: number; why: string };
    expect(saved.why).toBe('SIGUSR1');
    await until('a step after the checkpoint in the new round', async () => progress(name).some((p) => p.step === saved.step + 1 && p.round > 1 && p.node !== `${name}-0`), 60_000);
    await until(`pod ${name}-0 gone`, async () => !(await podNames()).includes(`${name}-0`), 60_000);
  });

  test('a pod\'s container SIGKILLed: one restart, blamed on that pod; a replacement joins', async () => {
    const victim = `${name}-1`;
    const id = (await k.must(['get', 'pod', victim, '-n', NS, '-o', 'jsonpath={.status.containerStatuses[0].containerID}'])).trim().replace(/^containerd:\/\//, '');
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    await timed(`SIGKILL of ${victim}'s container → ${name}-3 running in the job, world size 2`, async () => {
      const r = await run('/usr/bin/ctr', ['-a', k.containerdSocket, '-n', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', id]);
      expect(r.code).toBe(0);
      await until('the replacement in the job, world size 2', async () => {
        const s = await jobStatus(jobId);
        return s.state === 'running' && s.worldSize === 2 && running(s).join() === [`${name}-2`, `${name}-3`].join() && s;
      });
    });
    const s = await jobStatus(jobId);
    expect(s.restarts).toBe(1);
    expect(s.lastFailure?.nodeId).toBe(victim);
    const r = await until('.status shows the restart and the blame', async () => { const x = await resource(name); return x.status?.restarts === 1 && x.status.lastFailure; }, 30_000);
    expect(r).toContain(victim);
  });

  test('kubectl scale --replicas 3: a third pod joins without a restart; --replicas 1: two drained, their pods deleted', async () => {
    await timed('kubectl scale --replicas 3 → world size 3', async () => {
      await k.must(['scale', `telasticjob/${name}`, '-n', NS, '--replicas', '3']);
      await until('world size 3', async () => { const s = await jobStatus(jobId); return s.state === 'running' && s.worldSize === 3 && s; });
    });
    expect(running(await jobStatus(jobId))).toEqual([`${name}-2`, `${name}-3`, `${name}-4`]);
    expect((await jobStatus(jobId)).restarts).toBe(1);
    const drainsBefore = (await jobStatus(jobId)).preemptions?.length ?? 0;
    await timed('kubectl scale --replicas 1 → world size 1, two pods deleted', async () => {
      await k.must(['scale', `telasticjob/${name}`, '-n', NS, '--replicas', '1']);
      await until('world size 1 and one pod', async () => {
        const s = await jobStatus(jobId);
        return s.state === 'running' && s.worldSize === 1 && (await podNames()).length === 1 && s;
      });
    });
    const s = await jobStatus(jobId);
    // The oldest stays; the newest two were drained checkpoint-first.
    expect(running(s)).toEqual([`${name}-2`]);
    expect(await podNames()).toEqual([`${name}-2`]);
    expect(s.restarts).toBe(1);
    expect(s.preemptions?.slice(drainsBefore).map((p) => p.nodeId).sort()).toEqual([`${name}-3`, `${name}-4`]);
    expect(s.maxNodes).toBe(1);
  });

  test('a HorizontalPodAutoscaler scales the job through its scale subresource: up by minReplicas, down by maxReplicas', async () => {
    const hpa = (min: number, max: number) => ({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name, namespace: NS },
      spec: {
        scaleTargetRef: { apiVersion: 'telastic.dev/v1alpha1', kind: 'TelasticJob', name },
        minReplicas: min,
        maxReplicas: max,
        // The metric an adapter would serve (docs/kubernetes.md); without one the HPA still keeps
        // the target within its bounds, which is what this cluster can show.
        metrics: [{ type: 'External', external: { metric: { name: 'telastic_pool_jobs_waiting' }, target: { type: 'AverageValue', averageValue: '1' } } }],
      },
    });
    const before = await jobStatus(jobId);
    const pods = await podNames();
    expect(pods).toHaveLength(1);
    try {
      await timed('HPA minReplicas 2 → world size 2', async () => {
        await k.must(['apply', '-f', '-'], { input: JSON.stringify(hpa(2, 3)) });
        await until('world size 2, by the HPA', async () => { const s = await jobStatus(jobId); return s.state === 'running' && s.worldSize === 2 && (await podNames()).length === 2 && s; });
      });
      expect((await resource(name)) as unknown).toMatchObject({ spec: { replicas: 2 } });
      type Hpa = { status?: { desiredReplicas?: number; conditions?: { type: string; status: string; reason: string }[] } };
      const h = JSON.parse(await k.must(['get', 'hpa', name, '-n', NS, '-o', 'json'])) as Hpa;
      expect(h.status?.desiredReplicas).toBe(2);
      expect(h.status?.conditions).toContainEqual(expect.objectContaining({ type: 'AbleToScale', status: 'True' }));
      const joined = (await podNames()).filter((p) => !pods.includes(p));
      expect(joined).toHaveLength(1);
      expect((await jobStatus(jobId)).restarts).toBe(before.restarts);

      await timed('HPA maxReplicas 1 → world size 1, the newest pod drained', async () => {
        await k.must(['apply', '-f', '-'], { input: JSON.stringify(hpa(1, 1)) });
        await until('world size 1 and one pod, by the HPA', async () => { const s = await jobStatus(jobId); return s.state === 'running' && s.worldSize === 1 && (await podNames()).length === 1 && s; });
      });
      const s = await jobStatus(jobId);
      expect(await podNames()).toEqual(pods);
      expect(s.restarts).toBe(before.restarts);
      expect(s.preemptions?.slice(before.preemptions?.length ?? 0).map((p) => p.nodeId)).toEqual(joined);
    } finally {
      await k.kubectl(['delete', 'hpa', name, '-n', NS, '--ignore-not-found']);
    }
  });

  test('deleting the resource ends the job and leaves no pod', async () => {
    await timed('kubectl delete telasticjob → job cancelled, no pod, resource gone', async () => {
      await k.must(['delete', 'telasticjob', name, '-n', NS, '--timeout', '120s'], { timeoutMs: 130_000 });
      await until('no pod left', async () => (await podNames()).length === 0, 120_000);
    });
    expect((await k.kubectl(['get', 'telasticjob', name, '-n', NS])).code).not.toBe(0);
    expect((await jobStatus(jobId)).state).toBe('cancelled');
  });
});

/**
 * Real DDP in the pods: examples/train.py (in the image) under the project's torch, mounted from
 * the host — the interpreter's prefix and the venv's site-packages, read-only, and the one library
 * the image lacks that Python's ctypes needs (libffi). One pod's container is SIGKILLed in
 * training: the survivor's collective fails, a replacement pod joins, and the job resumes from
 * its newest checkpoint and trains to the end.
 */
describe('a TelasticJob of real DDP (torch from the project\'s .venv)', () => {
  const name = 'ddp';
  const STEPS = 300;
  const python = path.join(ROOT, '.venv', 'bin', 'python');

  function torchVolumes() {
    const [prefix, site, ctypesSo] = execFileSync(python, ['-c', 'import sys, sysconfig, _ctypes; print(sys.base_prefix); print(sysconfig.get_paths()["purelib"]); print(_ctypes.__file__)'], { encoding: 'utf8' }).trim().split('\n');
    const ffi = /libffi\.so\.\d+ => (\S+)/.exec(execFileSync('ldd', [ctypesSo], { encoding: 'utf8' }));
    mkdirSync(path.join(shared, 'lib'), { recursive: true });
    if (ffi) copyFileSync(realpathSync(ffi[1]), path.join(shared, 'lib', path.basename(ffi[0].split(' ')[0])));
    return { prefix, site };
  }

  test('a pod SIGKILLed in training: the replacement joins and the job resumes from its checkpoint to the end', async () => {
    const { prefix, site } = torchVolumes();
    const spec = job(name).spec;
    const tj = {
      ...job(name),
      spec: {
        ...spec,
        command: ['/py/bin/python3', '/opt/telastic/examples/train.py', '--steps', String(STEPS), '--ckpt-every', '20', '--step-time', '0.05', '--progress', `/work/out/${name}/progress.log`],
        nnodes: { min: 1, max: 2 },
        replicas: 2,
        checkpoint: { volume: { hostPath: { path: path.join(shared, 'ckpt-ddp') } }, mountPath: '/ckpt' },
        env: [{ name: 'PYTHONPATH', value: '/site' }, { name: 'LD_LIBRARY_PATH', value: '/py/lib:/work/lib' }, { name: 'OMP_NUM_THREADS', value: '1' }],
        volumes: [...spec.volumes, { name: 'py', hostPath: { path: prefix } }, { name: 'site', hostPath: { path: site } }],
        volumeMounts: [...spec.volumeMounts, { name: 'py', mountPath: '/py', readOnly: true }, { name: 'site', mountPath: '/site', readOnly: true }],
      },
    };
    mkdirSync(path.join(shared, 'ckpt-ddp'));
    chmodSync(path.join(shared, 'ckpt-ddp'), 0o777);
    mkdirSync(path.join(shared, 'out', name));
    chmodSync(path.join(shared, 'out', name), 0o777);
    const log = () => { const f = path.join(shared, 'out', name, 'progress.log'); return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').map((l) => l.split(' ').map(Number)) : []; };
    await k.must(['apply', '-f', '-'], { input: JSON.stringify(tj) });
    const jobId = await until('the operator started the job', async () => (await resource(name)).status?.jobId);
    await until('training at world size 2 past the first checkpoint', async () => log().some(([step, world]) => step > 25 && world === 2), 300_000);
    const victim = `${name}-1`;
    const id = (await k.must(['get', 'pod', victim, '-n', NS, '-o', 'jsonpath={.status.containerStatuses[0].containerID}'])).trim().replace(/^containerd:\/\//, '');
    const killedAt = Date.now();
    const lastStep = log().at(-1)![0];
    expect((await run('/usr/bin/ctr', ['-a', k.containerdSocket, '-n', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', id])).code).toBe(0);
    const done = await until('the job succeeded', async () => { const s = await jobStatus(jobId); if (s.state === 'failed') throw new Error(`the job failed: ${JSON.stringify(s.lastFailure)}`); return s.state === 'succeeded' && s; }, 600_000);
    const steps = log();
    const resumedAt = steps.findIndex(([, , t], i) => i > 0 && t * 1000 > killedAt && steps[i][0] <= steps[i - 1][0]);
    expect(resumedAt).toBeGreaterThan(0);
    const [resumeStep, , resumeTime] = steps[resumedAt];
    // It went back to a checkpoint (a multiple of 20, at most the step it had reached), not to step 1.
    expect((resumeStep - 1) % 20).toBe(0);
    expect(resumeStep).toBeGreaterThan(1);
    expect(resumeStep).toBeLessThanOrEqual(lastStep + 1);
    expect(steps.at(-1)![0]).toBe(STEPS);
    expect(done.restarts).toBe(1);
    expect(done.lastFailure?.nodeId).toBe(victim);
    expect(done.nodes.map((n) => n.nodeId)).toContain(`${name}-2`);
    console.log(`DDP in pods: ${victim} SIGKILLed at step ${lastStep}; first step after, ${resumeStep} (from the checkpoint at ${resumeStep - 1}), ${(resumeTime - killedAt / 1000).toFixed(1)} s after the kill; trained to ${STEPS}`);
    await k.must(['delete', 'telasticjob', name, '-n', NS, '--timeout', '120s'], { timeoutMs: 130_000 });
    await until('no pod left', async () => (await podNames()).length === 0, 120_000);
  });
});
