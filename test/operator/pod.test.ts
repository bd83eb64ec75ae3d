/**
 * The pod of a node: `telastic run`'s own parser takes its argv (with the kubelet's $(VAR)
 * expansion done) and makes the pod name the node id and the pod IP the advertised address.
 */
import { parseRunArgs, type RunSystemInfo } from '../../src/cli/run-options';
import { podFor, runArgs } from '../../src/operator/pod';
import { jobSpecSchema } from '../../src/job/spec';
import { telasticJobSpecSchema, toJobSpec } from '../../src/operator/resource';
import { ENV, JOB_ID, UID, job } from './fixtures';

const sys: RunSystemInfo = { cpuCount: 8, hostname: 'ignored', pid: 1, randomId: () => 'x' };

/** What the kubelet does to args: $(NAME) from the container's environment. */
const expand = (args: string[], env: Record<string, string>) => args.map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_, n: string) => env[n] ?? `$(${n})`));

const full = {
  image: 'telastic:dev',
  imagePullPolicy: 'Never',
  command: ['train.py', '--lr', '0.1'],
  nnodes: { min: 1, max: 3 },
  replicas: 2,
  nprocPerNode: 2,
  maxRestarts: 3,
  rdzvConf: { last_call_timeout: 2, heartbeat_timeout: 5 },
  checkpoint: { volume: { persistentVolumeClaim: { claimName: 'ckpt' } }, mountPath: '/ckpt', keep: 2 },
  env: [{ name: 'NCCL_DEBUG', value: 'INFO' }],
  resources: { limits: { 'nvidia.com/gpu': 1 } },
  nodeSelector: { pool: 'spot' },
  tolerations: [{ key: 'spot', operator: 'Exists' }],
  terminationGracePeriodSeconds: 60,
};
const j = job(full);
const spec = telasticJobSpecSchema.parse(full);
const p = podFor(j, spec, 5, ENV);
const c = p.spec!.containers[0];

describe('a node\'s pod', () => {
  it('runs telastic run, whose own parser makes the pod name the node id and the pod IP its address', () => {
    const o = parseRunArgs(expand(c.args!, { TELASTIC_POD_NAME: 'train-5', TELASTIC_POD_IP: '10.244.0.9' }).slice(1), {}, sys);
    expect(c.args![0]).toBe('run');
    expect(o).toMatchObject({
      nodeId: 'train-5',
      localAddr: '10.244.0.9',
      coordinator: false,
      rdzvId: JOB_ID,
      address: 'temporal.telastic:7233',
      namespace: 'default',
      taskQueue: 'telastic',
      minNodes: 1,
      maxNodes: 3,
      nprocPerNode: 2,
      maxRestarts: 3,
      checkpointDir: '/ckpt',
      keepCheckpoints: 2,
      leaveGraceMs: 55_000,
      rdzv: { lastCallTimeoutMs: 2000, heartbeatTimeoutMs: 5000 },
      entrypoint: { script: 'train.py', args: ['--lr', '0.1'], module: false, noPython: false },
    });
  });

  it.each([
    ['every key', { join_timeout: 60, last_call_timeout: 0, heartbeat_timeout: 2.5, prepare_timeout: 0.0004, unusable_timeout: 30, group_size: 8 }],
    ['some keys', { last_call_timeout: 1.5 }],
    ['none', undefined],
  ])('gives its agent the rendezvous timing the operator starts the job with (%s)', (_what, rdzvConf) => {
    const s = telasticJobSpecSchema.parse({ ...full, rdzvConf });
    const o = parseRunArgs(expand(runArgs(j, s, ENV), { TELASTIC_POD_NAME: 'train-0', TELASTIC_POD_IP: '10.0.0.1' }).slice(1), {}, sys);
    const started = jobSpecSchema.parse(toJobSpec(j, s));
    expect(started.rdzv).toEqual({ ...o.rdzv, ...(o.rdzv.unusableTimeoutMs === undefined ? {} : { unusableTimeoutMs: o.rdzv.unusableTimeoutMs }) });
    expect(started.entrypoint).toEqual(o.entrypoint);
    expect([started.minNodes, started.nprocPerNode, started.maxRestarts, started.checkpointDir, started.keepCheckpoints]).toEqual([o.minNodes, o.nprocPerNode, o.maxRestarts, o.checkpointDir, o.keepCheckpoints]);
  });

  it('takes both from the downward API', () => {
    expect(c.env!.slice(0, 2)).toEqual([
      { name: 'TELASTIC_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'TELASTIC_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ]);
    expect(c.env!.slice(2)).toEqual([{ name: 'NCCL_DEBUG', value: 'INFO' }]);
  });

  it('is owned by its TelasticJob, labelled for the selector, never restarted in place', () => {
    expect(p.metadata).toMatchObject({
      name: 'train-5',
      namespace: 'ml',
      labels: { 'telastic.dev/job': 'train', 'telastic.dev/index': '5', 'app.kubernetes.io/managed-by': 'telastic-operator' },
      ownerReferences: [{ apiVersion: 'telastic.dev/v1alpha1', kind: 'TelasticJob', name: 'train', uid: UID, controller: true, blockOwnerDeletion: true }],
    });
    expect(p.spec).toMatchObject({ restartPolicy: 'Never', terminationGracePeriodSeconds: 60, nodeSelector: { pool: 'spot' }, tolerations: [{ key: 'spot', operator: 'Exists' }], automountServiceAccountToken: false });
  });

  it('mounts the checkpoint volume where --checkpoint-dir points, and has the resources asked', () => {
    expect(p.spec!.volumes).toEqual([{ name: 'telastic-checkpoints', persistentVolumeClaim: { claimName: 'ckpt' } }]);
    expect(c.volumeMounts).toEqual([{ name: 'telastic-checkpoints', mountPath: '/ckpt' }]);
    expect(c).toMatchObject({ image: 'telastic:dev', imagePullPolicy: 'Never', resources: { limits: { 'nvidia.com/gpu': 1 } } });
  });

  it('adds the spec\'s own volumes and mounts after the checkpoint\'s', () => {
    const more = telasticJobSpecSchema.parse({ ...full, volumes: [{ name: 'data', hostPath: { path: '/srv/data' } }], volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }] });
    const q = podFor(j, more, 0, ENV);
    expect(q.spec!.volumes).toEqual([{ name: 'telastic-checkpoints', persistentVolumeClaim: { claimName: 'ckpt' } }, { name: 'data', hostPath: { path: '/srv/data' } }]);
    expect(q.spec!.containers[0].volumeMounts).toEqual([{ name: 'telastic-checkpoints', mountPath: '/ckpt' }, { name: 'data', mountPath: '/data', readOnly: true }]);
  });

  it('puts -m and --no-python before the script, so they are telastic\'s flags, not the script\'s', () => {
    const m = telasticJobSpecSchema.parse({ ...full, command: ['pkg.train', '--x'], module: true });
    const o = parseRunArgs(expand(runArgs(j, m, ENV), { TELASTIC_POD_NAME: 'train-0', TELASTIC_POD_IP: '10.0.0.1' }).slice(1), {}, sys);
    expect(o.entrypoint).toEqual({ script: 'pkg.train', args: ['--x'], module: true, noPython: false });
    const np = telasticJobSpecSchema.parse({ ...full, command: ['/bin/train', '-v'], noPython: true });
    expect(parseRunArgs(expand(runArgs(j, np, ENV), { TELASTIC_POD_NAME: 'train-0', TELASTIC_POD_IP: '10.0.0.1' }).slice(1), {}, sys).entrypoint).toEqual({ script: '/bin/train', args: ['-v'], module: false, noPython: true });
  });

  it('virtualLocalRank is --virtual-local-rank, a flag of telastic\'s and not of the script', () => {
    const pod = (extra: Record<string, unknown>) => parseRunArgs(expand(runArgs(j, telasticJobSpecSchema.parse({ ...full, ...extra }), ENV), { TELASTIC_POD_NAME: 'train-0', TELASTIC_POD_IP: '10.0.0.1' }).slice(1), {}, sys);
    const v = pod({ virtualLocalRank: true });
    expect({ virtualLocalRank: v.virtualLocalRank, args: v.entrypoint.args }).toEqual({ virtualLocalRank: true, args: ['--lr', '0.1'] });
    expect(pod({}).virtualLocalRank).toBe(false);
  });

  it('without a checkpoint or a secret: no volume, no envFrom; with them: both', () => {
    const bare = podFor(j, telasticJobSpecSchema.parse({ image: 'i', command: ['t.py'], nnodes: { min: 1, max: 1 } }), 0, ENV);
    expect(bare.spec!.volumes).toBeUndefined();
    expect(bare.spec!.containers[0].envFrom).toBeUndefined();
    expect(bare.spec!.containers[0].args).toContain('--leave-grace');
    expect(bare.spec!.containers[0].args![bare.spec!.containers[0].args!.indexOf('--leave-grace') + 1]).toBe('25s');
    const secret = podFor(j, spec, 0, { ...ENV, envFromSecret: 'temporal-tls', serviceAccountName: 'trainer' });
    expect(secret.spec!.containers[0].envFrom).toEqual([{ secretRef: { name: 'temporal-tls' } }]);
    expect(secret.spec).toMatchObject({ serviceAccountName: 'trainer' });
  });
});
