/** zod schemas of the job spec and messages, and their one-line error messages. */
import {
  describeZodError,
  drainRequestSchema,
  joinRequestSchema,
  jobSpecSchema,
  parseOrThrow,
  scaleRequestSchema,
} from '../../src/job/spec';

const minimal = {
  jobId: 'job1',
  minNodes: 1,
  maxNodes: 2,
  nprocPerNode: 4,
  entrypoint: { script: 'train.py', args: [] },
  rdzv: {},
};

function errorOf(r: { success: boolean; error?: import('zod').ZodError }): string {
  if (r.success || !r.error) throw new Error('expected a validation error');
  return describeZodError(r.error);
}

describe('jobSpecSchema', () => {
  it('fills torchrun defaults', () => {
    const s = jobSpecSchema.parse(minimal);
    expect(s).toEqual({
      jobId: 'job1',
      minNodes: 1,
      maxNodes: 2,
      nprocPerNode: 4,
      maxRestarts: 0,
      role: 'default',
      entrypoint: { script: 'train.py', args: [], module: false, noPython: false },
      rdzv: { joinTimeoutMs: 600_000, lastCallTimeoutMs: 30_000, heartbeatTimeoutMs: 10_000, prepareTimeoutMs: 5_000, groupSize: 64 },
      shutdownTimeoutMs: 30_000,
      searchAttributes: false,
    });
    expect('checkpointDir' in s).toBe(false);
  });

  it('keeps given values', () => {
    const s = jobSpecSchema.parse({
      ...minimal,
      maxRestarts: 3,
      role: 'trainer',
      entrypoint: { script: 'pkg.train', args: ['--lr', '0.1'], module: true },
      rdzv: { joinTimeoutMs: 1000, lastCallTimeoutMs: 0 },
      checkpointDir: '/ckpt',
      keepCheckpoints: 2,
    });
    expect(s.maxRestarts).toBe(3);
    expect(s.role).toBe('trainer');
    expect(s.entrypoint).toEqual({ script: 'pkg.train', args: ['--lr', '0.1'], module: true, noPython: false });
    expect(s.rdzv.joinTimeoutMs).toBe(1000);
    expect(s.rdzv.lastCallTimeoutMs).toBe(0);
    expect(s.checkpointDir).toBe('/ckpt');
    expect(s.keepCheckpoints).toBe(2);
  });

  it('accepts minNodes == maxNodes', () => {
    expect(jobSpecSchema.safeParse({ ...minimal, minNodes: 2, maxNodes: 2 }).success).toBe(true);
  });

  it('rejects minNodes > maxNodes with a message naming minNodes', () => {
    const msg = errorOf(jobSpecSchema.safeParse({ ...minimal, minNodes: 3, maxNodes: 2 }));
    expect(msg).toBe('minNodes: minNodes (3) must not exceed maxNodes (2)');
  });

  it.each([
    ['empty', ''],
    ['leading dash', '-job'],
    ['space', 'my job'],
    ['slash', 'a/b'],
    ['too long', 'x'.repeat(201)],
  ])('rejects a bad jobId (%s) naming jobId', (_what, jobId) => {
    const msg = errorOf(jobSpecSchema.safeParse({ ...minimal, jobId }));
    expect(msg).toMatch(/^jobId: /);
    expect(msg).not.toContain('\n');
  });

  it('accepts ids with letters, digits and . _ : @ -', () => {
    expect(jobSpecSchema.safeParse({ ...minimal, jobId: 'Run-1.a_b:c@d' }).success).toBe(true);
  });

  it('explains the allowed jobId characters', () => {
    expect(errorOf(jobSpecSchema.safeParse({ ...minimal, jobId: 'a b' }))).toBe('jobId: letters, digits and . _ : @ - only');
  });

  it.each([
    ['minNodes', { minNodes: 0 }],
    ['nprocPerNode', { nprocPerNode: 1.5 }],
    ['maxRestarts', { maxRestarts: -1 }],
    ['entrypoint.script', { entrypoint: { script: '', args: [] } }],
    ['rdzv.heartbeatTimeoutMs', { rdzv: { heartbeatTimeoutMs: 0 } }],
  ])('names the bad field %s', (field, over) => {
    const msg = errorOf(jobSpecSchema.safeParse({ ...minimal, ...over }));
    expect(msg.startsWith(`${field}: `)).toBe(true);
  });
});

describe('scaleRequestSchema', () => {
  it('rejects an empty request', () => {
    const r = scaleRequestSchema.safeParse({});
    expect(r.success).toBe(false);
    expect(errorOf(r)).toBe('input: give minNodes or maxNodes');
  });

  it('accepts either side or both', () => {
    expect(scaleRequestSchema.parse({ minNodes: 2 })).toEqual({ minNodes: 2 });
    expect(scaleRequestSchema.parse({ maxNodes: 3 })).toEqual({ maxNodes: 3 });
    expect(scaleRequestSchema.parse({ minNodes: 1, maxNodes: 3 })).toEqual({ minNodes: 1, maxNodes: 3 });
  });

  it('rejects non-positive or fractional sizes naming the field', () => {
    expect(errorOf(scaleRequestSchema.safeParse({ maxNodes: 0 }))).toMatch(/^maxNodes: /);
    expect(errorOf(scaleRequestSchema.safeParse({ minNodes: 1.5 }))).toMatch(/^minNodes: /);
  });
});

describe('joinRequestSchema / drainRequestSchema', () => {
  it('defaults role and launch mode', () => {
    const r = joinRequestSchema.parse({ nodeId: 'n1', address: '10.0.0.1', slots: 2, entrypoint: { script: 't.py', args: [] } });
    expect(r.role).toBe('default');
    expect(r.entrypoint).toEqual({ script: 't.py', args: [], module: false, noPython: false });
  });

  it('rejects zero slots naming slots', () => {
    const r = joinRequestSchema.safeParse({ nodeId: 'n1', address: 'a', slots: 0, entrypoint: { script: 't.py', args: [] } });
    expect(errorOf(r)).toMatch(/^slots: /);
  });

  it('rejects a bad node id naming nodeId', () => {
    expect(errorOf(drainRequestSchema.safeParse({ nodeId: '' }))).toMatch(/^nodeId: /);
  });
});

describe('describeZodError / parseOrThrow', () => {
  it('one line with the dotted path of the first bad field', () => {
    const r = jobSpecSchema.safeParse({ ...minimal, entrypoint: { script: 't.py', args: [1] } });
    const msg = errorOf(r);
    expect(msg).toMatch(/^entrypoint\.args\.0: /);
    expect(msg.split('\n')).toHaveLength(1);
  });

  it('uses the prefix', () => {
    const r = scaleRequestSchema.safeParse({ minNodes: 0 });
    if (r.success) throw new Error('expected failure');
    expect(describeZodError(r.error, 'scale: ')).toMatch(/^scale: minNodes: /);
  });

  it('only reports the first issue, even when many fields are bad', () => {
    const r = jobSpecSchema.safeParse({ jobId: '', minNodes: 0, maxNodes: 0, nprocPerNode: 0, entrypoint: {}, rdzv: {} });
    if (r.success) throw new Error('expected failure');
    expect(r.error.issues.length).toBeGreaterThan(1);
    const msg = describeZodError(r.error);
    expect(msg.split('\n')).toHaveLength(1);
    const first = r.error.issues[0];
    expect(msg).toBe(`${first.path.join('.')}: ${first.message}`);
  });

  it('parseOrThrow returns parsed data or throws one line naming what and the field', () => {
    expect(parseOrThrow(scaleRequestSchema, { maxNodes: 2 }, 'scale')).toEqual({ maxNodes: 2 });
    expect(() => parseOrThrow(scaleRequestSchema, {}, 'scale')).toThrow(/^invalid scale: input: give minNodes or maxNodes$/);
    expect(() => parseOrThrow(jobSpecSchema, { ...minimal, minNodes: 5 }, 'spec')).toThrow(
      'invalid spec: minNodes: minNodes (5) must not exceed maxNodes (2)',
    );
  });
});
