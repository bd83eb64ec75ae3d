/**
 * The CRD's schema and the operator's zod schema agree: every spec of the table is accepted by
 * both or rejected by both, naming the same field. The OpenAPI part is checked with ajv (the
 * schema turned into JSON Schema); what only the API server checks (CEL rules, list-map keys)
 * is rejected by zod with the very message the CRD's rule gives. The API server itself checks
 * the CEL rules in the cluster e2e.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { jobSpecSchema } from '../../src/job/spec';
import { parseSpec, telasticJobSpecSchema, toJobSpec } from '../../src/operator/resource';
import { job, minimalSpec } from './fixtures';

const yaml = require('js-yaml') as { load(text: string): unknown };
type Schema = Record<string, unknown>;

const crd = yaml.load(fs.readFileSync(path.join(__dirname, '../../deploy/crd/telasticjobs.telastic.dev.yaml'), 'utf8')) as {
  spec: { group: string; scope: string; names: { kind: string; plural: string }; versions: Array<Schema & { name: string; schema: { openAPIV3Schema: Schema } }> };
};
const version = crd.spec.versions[0];
const root = version.schema.openAPIV3Schema as Schema & { properties: Record<string, Schema> };
const specSchema = root.properties.spec as Schema & { properties: Record<string, Schema> };

/** OpenAPI v3.0 as Kubernetes takes it → JSON Schema as ajv takes it. */
function toJsonSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (!s || typeof s !== 'object') return s;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s as Schema)) {
    if (k.startsWith('x-kubernetes-') || k === 'nullable' || k === 'default' || k === 'description') continue;
    out[k] = toJsonSchema(v);
  }
  if (out.exclusiveMinimum === true) {
    out.exclusiveMinimum = out.minimum;
    delete out.minimum;
  }
  return out;
}

/** Every CEL rule's message in the schema. */
function celMessages(s: unknown, acc: string[] = []): string[] {
  if (Array.isArray(s)) s.forEach((x) => celMessages(x, acc));
  else if (s && typeof s === 'object') {
    for (const [k, v] of Object.entries(s as Schema)) {
      if (k === 'x-kubernetes-validations') acc.push(...(v as Array<{ message: string }>).map((r) => r.message));
      else celMessages(v, acc);
    }
  }
  return acc;
}

const validate = new Ajv({ strict: false, allErrors: false }).compile(toJsonSchema(specSchema) as Schema);
const ajvField = (): string => {
  const e = validate.errors![0];
  const at = e.instancePath.split('/').filter(Boolean);
  if (e.keyword === 'required') at.push((e.params as { missingProperty: string }).missingProperty);
  return at.join('.');
};
const zodField = (spec: unknown): string | null => {
  const r = telasticJobSpecSchema.safeParse(spec);
  return r.success ? null : r.error.issues[0].path.join('.');
};

const m = minimalSpec;
const good: Array<[string, Record<string, unknown>]> = [
  ['the minimal spec', m()],
  ['every field', {
    ...m(), imagePullPolicy: 'Never', module: true, noPython: false, virtualLocalRank: true, replicas: 2, nprocPerNode: 4, maxRestarts: 3,
    rdzvConf: { join_timeout: 600, last_call_timeout: 0, heartbeat_timeout: 2.5, prepare_timeout: 5, unusable_timeout: 60, group_size: 64 },
    checkpoint: { volume: { persistentVolumeClaim: { claimName: 'ckpt' } }, mountPath: '/ckpt', keep: 3 },
    env: [{ name: 'NCCL_DEBUG', value: 'INFO' }, { name: 'WANDB_API_KEY', valueFrom: { secretKeyRef: { name: 'wandb', key: 'key' } } }],
    resources: { limits: { cpu: 2, memory: '4Gi', 'nvidia.com/gpu': 1 }, requests: { cpu: '500m', memory: '1e9' } },
    nodeSelector: { 'cloud.google.com/gke-spot': 'true' },
    tolerations: [{ key: 'spot', operator: 'Exists', effect: 'NoSchedule' }, { key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoExecute', tolerationSeconds: 30 }],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'imagenet', readOnly: true } }, { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } }],
    volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }, { name: 'shm', mountPath: '/dev/shm' }],
    terminationGracePeriodSeconds: 120,
  }],
  ['replicas at nnodes.min', { ...m(), replicas: 1 }],
  ['replicas at nnodes.max', { ...m(), replicas: 4 }],
  ['a fixed size', { ...m(), nnodes: { min: 2, max: 2 } }],
  ['no grace at all', { ...m(), terminationGracePeriodSeconds: 0 }],
  ['a checkpoint volume with the default mount path', { ...m(), checkpoint: { volume: { hostPath: { path: '/srv/ckpt' } } } }],
  ['an unknown rdzvConf key (torchrun ignores them too)', { ...m(), rdzvConf: { read_timeout: 60 } }],
];

/** Rejected by the OpenAPI schema (ajv) and by zod, at the same field. */
const badSchema: Array<[string, Record<string, unknown>, string]> = [
  ['no image', { command: ['t.py'], nnodes: { min: 1, max: 1 } }, 'image'],
  ['an empty image', { ...m(), image: '' }, 'image'],
  ['no command', { image: 'x', nnodes: { min: 1, max: 1 } }, 'command'],
  ['an empty command', { ...m(), command: [] }, 'command'],
  ['a command that is a string', { ...m(), command: 'train.py' }, 'command'],
  ['a command item that is a number', { ...m(), command: ['t.py', 3] }, 'command.1'],
  ['no nnodes', { image: 'x', command: ['t.py'] }, 'nnodes'],
  ['virtualLocalRank a string', { ...m(), virtualLocalRank: 'yes' }, 'virtualLocalRank'],
  ['nnodes.min 0', { ...m(), nnodes: { min: 0, max: 2 } }, 'nnodes.min'],
  ['nnodes.max 1.5', { ...m(), nnodes: { min: 1, max: 1.5 } }, 'nnodes.max'],
  ['nnodes without max', { ...m(), nnodes: { min: 1 } }, 'nnodes.max'],
  ['replicas 0', { ...m(), replicas: 0 }, 'replicas'],
  ['nprocPerNode 0', { ...m(), nprocPerNode: 0 }, 'nprocPerNode'],
  ['nprocPerNode "auto"', { ...m(), nprocPerNode: 'auto' }, 'nprocPerNode'],
  ['maxRestarts -1', { ...m(), maxRestarts: -1 }, 'maxRestarts'],
  ['join_timeout 0', { ...m(), rdzvConf: { join_timeout: 0 } }, 'rdzvConf.join_timeout'],
  ['heartbeat_timeout -1', { ...m(), rdzvConf: { heartbeat_timeout: -1 } }, 'rdzvConf.heartbeat_timeout'],
  ['last_call_timeout -1', { ...m(), rdzvConf: { last_call_timeout: -1 } }, 'rdzvConf.last_call_timeout'],
  ['join_timeout as a string', { ...m(), rdzvConf: { join_timeout: '600' } }, 'rdzvConf.join_timeout'],
  ['group_size 1001', { ...m(), rdzvConf: { group_size: 1001 } }, 'rdzvConf.group_size'],
  ['group_size 0', { ...m(), rdzvConf: { group_size: 0 } }, 'rdzvConf.group_size'],
  ['a checkpoint without a volume', { ...m(), checkpoint: { mountPath: '/ckpt' } }, 'checkpoint.volume'],
  ['a relative checkpoint mount path', { ...m(), checkpoint: { volume: { emptyDir: {} }, mountPath: 'ckpt' } }, 'checkpoint.mountPath'],
  ['checkpoint.keep 0', { ...m(), checkpoint: { volume: { emptyDir: {} }, keep: 0 } }, 'checkpoint.keep'],
  ['an env name with a dash', { ...m(), env: [{ name: 'A-B', value: '1' }] }, 'env.0.name'],
  ['an env name starting with a digit', { ...m(), env: [{ name: '1A', value: '1' }] }, 'env.0.name'],
  ['an env entry without a name', { ...m(), env: [{ value: '1' }] }, 'env.0.name'],
  ['an env value that is a number', { ...m(), env: [{ name: 'A', value: 1 }] }, 'env.0.value'],
  ['a cpu limit of "lots"', { ...m(), resources: { limits: { cpu: 'lots' } } }, 'resources.limits.cpu'],
  ['a memory request of 1.5 (not an integer, not a string)', { ...m(), resources: { requests: { memory: 1.5 } } }, 'resources.requests.memory'],
  ['a node selector value that is a number', { ...m(), nodeSelector: { zone: 1 } }, 'nodeSelector.zone'],
  ['a toleration operator "Maybe"', { ...m(), tolerations: [{ key: 'k', operator: 'Maybe' }] }, 'tolerations.0.operator'],
  ['a toleration effect "Sometimes"', { ...m(), tolerations: [{ key: 'k', effect: 'Sometimes' }] }, 'tolerations.0.effect'],
  ['terminationGracePeriodSeconds -1', { ...m(), terminationGracePeriodSeconds: -1 }, 'terminationGracePeriodSeconds'],
  ['imagePullPolicy "Sometimes"', { ...m(), imagePullPolicy: 'Sometimes' }, 'imagePullPolicy'],
  ['module "yes"', { ...m(), module: 'yes' }, 'module'],
  ['a volume named in capitals', { ...m(), volumes: [{ name: 'Data', emptyDir: {} }] }, 'volumes.0.name'],
  ['a volume without a name', { ...m(), volumes: [{ emptyDir: {} }] }, 'volumes.0.name'],
  ['a relative mount path', { ...m(), volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'd', mountPath: 'data' }] }, 'volumeMounts.0.mountPath'],
  ['a mount path longer than PATH_MAX', { ...m(), volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'd', mountPath: `/${'d'.repeat(4096)}` }] }, 'volumeMounts.0.mountPath'],
  ['a checkpoint mount path longer than PATH_MAX', { ...m(), checkpoint: { volume: { emptyDir: {} }, mountPath: `/${'c'.repeat(4096)}` } }, 'checkpoint.mountPath'],
  ['a mount without a path', { ...m(), volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'd' }] }, 'volumeMounts.0.mountPath'],
];

/** Beyond OpenAPI: the API server's CEL rules (or list-map keys) reject these; zod with the rule's own message. */
const badCel: Array<[string, Record<string, unknown>, string | null]> = [
  ['nnodes.min above nnodes.max', { ...m(), nnodes: { min: 3, max: 2 } }, 'spec.nnodes.min: must not exceed nnodes.max'],
  ['replicas above nnodes.max', { ...m(), replicas: 5 }, 'spec.replicas: must be between nnodes.min and nnodes.max'],
  ['replicas below nnodes.min', { ...m(), nnodes: { min: 2, max: 4 }, replicas: 1 }, 'spec.replicas: must be between nnodes.min and nnodes.max'],
  ['an empty script', { ...m(), command: ['', 'x'] }, 'spec.command: the first item is the script (or module with module: true): not empty, not a flag'],
  ['a flag where the script goes', { ...m(), command: ['--nnodes', '2', 't.py'] }, 'spec.command: the first item is the script (or module with module: true): not empty, not a flag'],
  ['an env variable named twice (x-kubernetes-list-type: map)', { ...m(), env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }] }, null],
  ['a volume named twice (x-kubernetes-list-type: map)', { ...m(), volumes: [{ name: 'd', emptyDir: {} }, { name: 'd', emptyDir: {} }] }, null],
  ['a mount of a volume that is not there', { ...m(), volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'e', mountPath: '/e' }] }, 'spec.volumeMounts: each mount names one of volumes'],
  ['a mount at the checkpoint\'s path', { ...m(), checkpoint: { volume: { emptyDir: {} }, mountPath: '/ckpt' }, volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'd', mountPath: '/ckpt' }] }, "spec.volumeMounts: checkpoint.mountPath is the checkpoint volume's"],
  ['a mount at the checkpoint\'s default path', { ...m(), checkpoint: { volume: { emptyDir: {} } }, volumes: [{ name: 'd', emptyDir: {} }], volumeMounts: [{ name: 'd', mountPath: '/checkpoints' }] }, "spec.volumeMounts: checkpoint.mountPath is the checkpoint volume's"],
  ['a volume that takes the checkpoint volume\'s name', { ...m(), volumes: [{ name: 'telastic-checkpoints', emptyDir: {} }] }, "spec.volumes: telastic-checkpoints is the checkpoint volume's name"],
];

describe('the CRD', () => {
  it('is telastic.dev/v1alpha1 TelasticJob, namespaced, with status and scale subresources', () => {
    expect(crd.spec).toMatchObject({ group: 'telastic.dev', scope: 'Namespaced', names: { kind: 'TelasticJob', plural: 'telasticjobs' } });
    expect(version).toMatchObject({ name: 'v1alpha1', served: true, storage: true });
    expect(version.subresources).toEqual({ status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } });
  });

  it('shows state, round, world size, pods and restarts in kubectl get, from status fields that exist', () => {
    const cols = version.additionalPrinterColumns as Array<{ name: string; jsonPath: string }>;
    expect(cols.map((c) => c.name)).toEqual(expect.arrayContaining(['State', 'Round', 'World', 'Pods', 'Restarts', 'Age', 'Last-Failure']));
    const status = (root.properties.status as { properties: Record<string, unknown> }).properties;
    for (const c of cols.filter((x) => x.jsonPath.startsWith('.status.'))) expect(Object.keys(status)).toContain(c.jsonPath.slice('.status.'.length));
    for (const f of ['state', 'round', 'worldSize', 'restarts', 'lastFailure', 'replicas', 'selector', 'conditions']) expect(status).toHaveProperty(f);
  });

  it('has exactly the fields zod knows', () => {
    expect(Object.keys(specSchema.properties).sort()).toEqual(Object.keys(telasticJobSpecSchema.innerType().shape).sort());
    expect(Object.keys((specSchema.properties.rdzvConf as { properties: object }).properties).sort()).toEqual(
      ['group_size', 'heartbeat_timeout', 'join_timeout', 'last_call_timeout', 'prepare_timeout', 'unusable_timeout'],
    );
  });

  it.each(good)('accepts %s, as zod does, and the job spec it becomes is valid', (_what, spec) => {
    expect(validate(spec)).toBe(true);
    expect(zodField(spec)).toBeNull();
    const parsed = parseSpec(job(spec));
    if (!parsed.ok) throw new Error(parsed.message);
    expect(jobSpecSchema.safeParse(toJobSpec(job(spec), parsed.spec)).success).toBe(true);
  });

  it.each(badSchema)('rejects %s at the same field as zod', (_what, spec, field) => {
    expect(validate(spec)).toBe(false);
    expect(ajvField()).toBe(field);
    expect(zodField(spec)).toBe(field);
  });

  it.each(badCel)('leaves %s to the API server, whose rule zod mirrors word for word', (_what, spec, message) => {
    expect(validate(spec)).toBe(true);
    const parsed = parseSpec(job(spec));
    expect(parsed.ok).toBe(false);
    if (parsed.ok || message === null) return;
    expect(parsed.message).toBe(message);
    expect(celMessages(root).map((c) => `spec.${c}`)).toContain(message);
  });

  it('limits the name as its root rule does, with the same words', () => {
    const parsed = parseSpec(job({}, undefined, { name: 'n'.repeat(53) }));
    expect(parsed).toEqual({ ok: false, message: expect.stringMatching(/^metadata\.name: at most 52 characters/) });
    expect(celMessages(root)).toContain((parsed as { message: string }).message);
    expect(parseSpec(job({}, undefined, { name: 'n'.repeat(52) })).ok).toBe(true);
  });

  it('fixes every field but replicas, env, resources and scheduling once the job exists (transition rules)', () => {
    const fixed = Object.entries(specSchema.properties)
      .filter(([, s]) => (s['x-kubernetes-validations'] as Array<{ rule: string }> | undefined)?.some((r) => r.rule === 'self == oldSelf'))
      .map(([k]) => k);
    expect(fixed.sort()).toEqual(['command', 'image', 'maxRestarts', 'nnodes', 'nprocPerNode', 'rdzvConf']);
    // The checkpoint's path and count, and whether there is one; its volume (unknown fields, which CEL would cost at the request size) is not.
    const checkpoint = specSchema.properties.checkpoint as { properties: Record<string, Schema> };
    for (const f of ['mountPath', 'keep']) expect(checkpoint.properties[f]['x-kubernetes-validations']).toEqual([{ rule: 'self == oldSelf', message: `checkpoint.${f}: fixed once the job exists` }]);
    expect(specSchema['x-kubernetes-validations']).toContainEqual({ rule: 'has(self.checkpoint) == has(oldSelf.checkpoint)', message: 'checkpoint: added or removed only with a new job' });
  });
});

describe('examples/telasticjob.yaml', () => {
  it('is valid for the CRD and for zod', () => {
    const example = yaml.load(fs.readFileSync(path.join(__dirname, '../../examples/telasticjob.yaml'), 'utf8')) as { apiVersion: string; kind: string; spec: unknown };
    expect(example).toMatchObject({ apiVersion: 'telastic.dev/v1alpha1', kind: 'TelasticJob' });
    expect(validate(example.spec)).toBe(true);
    expect(zodField(example.spec)).toBeNull();
  });
});

describe('toJobSpec', () => {
  it('takes minNodes from nnodes.min, maxNodes from replicas (default nnodes.max), and compiles rdzvConf as --rdzv-conf', () => {
    const spec = { ...m(), nnodes: { min: 2, max: 8 }, nprocPerNode: 4, maxRestarts: 3, rdzvConf: { join_timeout: 60, last_call_timeout: 0.5 }, checkpoint: { volume: { emptyDir: {} }, keep: 2 } };
    const j = job(spec);
    const parsed = parseSpec(j);
    if (!parsed.ok) throw new Error(parsed.message);
    expect(toJobSpec(j, parsed.spec)).toEqual({
      jobId: 'ml.train.0f1e2d3c',
      minNodes: 2,
      maxNodes: 8,
      nprocPerNode: 4,
      maxRestarts: 3,
      entrypoint: { script: 'train.py', args: ['--epochs', '3'], module: false, noPython: false },
      rdzv: { joinTimeoutMs: 60_000, lastCallTimeoutMs: 500 },
      checkpointDir: '/checkpoints',
      keepCheckpoints: 2,
    });
    const scaled = job({ ...spec, replicas: 3 });
    expect(toJobSpec(scaled, telasticJobSpecSchema.parse(scaled.spec)).maxNodes).toBe(3);
  });
});
