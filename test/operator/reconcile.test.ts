/** The operator's decisions, pass by pass: what each observation leads to, and that a pass repeated decides nothing new. */
import { DELETE_PATIENCE_MS, DRAIN_SLACK_MS, reconcile } from '../../src/operator/reconcile';
import { FINALIZER } from '../../src/operator/types';
import { ENV, JOB_ID, NOW, UID, job, node, pod, status } from './fixtures';
import { World, kinds, named } from './world';

const running = (n: number, o: Parameters<typeof status>[0] = {}) =>
  status({ maxNodes: n, nodes: Array.from({ length: n }, (_, i) => node(`train-${i}`, 'running', i)), worldSize: n, ...o });

/** A world of `n` running pods whose job runs with them, settled. */
function steady(n: number, spec: Record<string, unknown> = {}): World {
  const j = job({ replicas: n, ...spec }, { nextIndex: n });
  const w = new World(j, Array.from({ length: n }, (_, i) => pod(j, i)), running(n));
  w.settle();
  w.log = [];
  return w;
}

describe('a new TelasticJob', () => {
  it('gets the finalizer, its workflow, then one pod per replica, with the counter saved before the pods', () => {
    const w = new World(job({}, undefined, { finalizers: [] }));
    const first = w.pass();
    expect(kinds(first)).toEqual(['addFinalizer', 'startJob', 'patchStatus', 'createPod', 'createPod', 'createPod', 'createPod', 'patchStatus']);
    expect(first[1]).toMatchObject({ kind: 'startJob', spec: { jobId: JOB_ID, minNodes: 1, maxNodes: 4 } });
    expect(first[2]).toEqual({ kind: 'patchStatus', status: { nextIndex: 4 } });
    expect(named(first, 'createPod')).toEqual(['train-0', 'train-1', 'train-2', 'train-3']);
    expect(w.resource.status).toMatchObject({ jobId: JOB_ID, state: 'pending', selector: 'telastic.dev/job=train', replicas: 4, observedGeneration: 1 });
  });

  it('starts with maxNodes = replicas', () => {
    const first = new World(job({ replicas: 2 })).pass();
    expect(first.find((a) => a.kind === 'startJob')).toMatchObject({ spec: { minNodes: 1, maxNodes: 2 } });
    expect(named(first, 'createPod')).toEqual(['train-0', 'train-1']);
  });

  it('is adopted, not started again, when its workflow runs; and repeated passes decide nothing', () => {
    const w = new World(job({ replicas: 2 }), [], running(2));
    const first = w.pass();
    expect(kinds(first)).not.toContain('startJob');
    w.pods.forEach((p) => (p.status = { phase: 'Running' }));
    w.settle();
    expect(w.pass()).toEqual([]);
    expect(w.resource.status).toMatchObject({ state: 'running', round: 1, worldSize: 2, restarts: 0, replicas: 2 });
  });

  it('mirrors the job: state, round, world size, restarts and the last failure in one line', () => {
    const w = steady(2);
    w.job = running(2, { state: 'restarting', round: 3, restarts: 1, worldSize: 2, lastFailure: { nodeId: 'train-1', rank: 1, exitCode: 1, signal: null, message: 'boom' } });
    expect(kinds(w.pass())).toEqual(['patchStatus']);
    expect(w.resource.status).toMatchObject({ state: 'restarting', round: 3, restarts: 1, lastFailure: 'rank 1 on node train-1: exit code 1: boom' });
    expect(w.pass()).toEqual([]);
  });

  it('ignores pods of a namesake (another uid)', () => {
    const other = job({ replicas: 1 }, undefined, { uid: 'ffffffff-0000' });
    const w = new World(job({ replicas: 1 }, { nextIndex: 1 }), [pod(other, 0)], running(1, { nodes: [] }));
    expect(named(w.pass(), 'createPod')).toEqual(['train-1']);
  });
});

describe('pods that end or go', () => {
  it('replaces a failed pod with a new name (a newcomer), and says so once', () => {
    const w = steady(2);
    w.setPhase('train-1', 'Failed');
    const a = w.pass();
    expect(kinds(a)).toEqual(['deletePod', 'event', 'patchStatus', 'createPod', 'event']);
    expect(a[1]).toMatchObject({ type: 'Warning', reason: 'PodFailed', message: expect.stringContaining('train-1') });
    expect(named(a, 'createPod')).toEqual(['train-2']);
    expect(w.pass()).toEqual([]);
  });

  it('replaces a pod being deleted (a preemption notice) at once, without touching it', () => {
    const j = job({ replicas: 2 }, { nextIndex: 2 });
    const w = new World(j, [pod(j, 0), pod(j, 1, 'Running', { deleting: true })], running(2));
    const a = w.pass();
    expect(named(a, 'deletePod')).toEqual([]);
    expect(named(a, 'createPod')).toEqual(['train-2']);
  });

  it('replaces a vanished pod, never reusing a name the job or a pod had', () => {
    const j = job({ replicas: 2 }, { nextIndex: 3 });
    const withDeparted = running(2, { nodes: [node('train-0'), node('train-2'), node('train-7', 'lost', null)] });
    const w = new World(j, [pod(j, 0)], withDeparted);
    expect(named(w.pass(), 'createPod')).toEqual(['train-8']);
  });

  it('replaces a pod that exited 0 while the job runs (drained by someone else), without a failure event', () => {
    const w = steady(2);
    w.setPhase('train-0', 'Succeeded');
    const a = w.pass();
    expect(a.filter((x) => x.kind === 'event' && x.type === 'Warning')).toEqual([]);
    expect(named(a, 'deletePod')).toEqual(['train-0']);
    expect(named(a, 'createPod')).toEqual(['train-2']);
  });

  it('replaces pods while the job does not answer, but neither starts nor scales it', () => {
    const w = steady(2);
    w.job = 'unknown';
    w.setPhase('train-0', 'Failed');
    const a = w.pass();
    expect(kinds(a)).not.toContain('startJob');
    expect(kinds(a)).not.toContain('scaleJob');
    expect(named(a, 'createPod')).toEqual(['train-2']);
    expect(w.resource.status?.message).toMatch(/did not answer/);
  });
});

describe('scaling', () => {
  it('up: raises the job\'s maxNodes before the new pods are created', () => {
    const w = steady(2);
    w.resource.spec = { ...(w.resource.spec as object), replicas: 4 };
    const a = w.pass();
    expect(kinds(a).slice(0, 4)).toEqual(['scaleJob', 'patchStatus', 'createPod', 'createPod']);
    expect(a[0]).toEqual({ kind: 'scaleJob', jobId: JOB_ID, minNodes: 1, maxNodes: 4 });
    expect(named(a, 'createPod')).toEqual(['train-2', 'train-3']);
  });

  it('down: drains the newest nodes checkpoint-first, and neither deletes their pods nor lowers maxNodes yet', () => {
    const w = steady(4, { terminationGracePeriodSeconds: 30 });
    w.resource.spec = { ...(w.resource.spec as object), replicas: 2 };
    const a = w.pass();
    expect(kinds(a).filter((k) => k !== 'patchStatus')).toEqual(['markDraining', 'drainNode', 'markDraining', 'drainNode']);
    expect(a.filter((x) => x.kind === 'drainNode')).toEqual([
      { kind: 'drainNode', jobId: JOB_ID, nodeId: 'train-2', graceMs: 25_000 },
      { kind: 'drainNode', jobId: JOB_ID, nodeId: 'train-3', graceMs: 25_000 },
    ]);
    // The checkpoint is being taken: nothing more until the job lets them go.
    w.job = running(4, { nodes: [node('train-0'), node('train-1'), node('train-2', 'checkpointing'), node('train-3', 'checkpointing')] });
    expect(kinds(w.pass()).filter((k) => k !== 'patchStatus')).toEqual([]);
    expect(w.pass()).toEqual([]);
  });

  it('down: deletes the drained pods and lowers maxNodes once the job let them go', () => {
    const w = steady(4);
    w.resource.spec = { ...(w.resource.spec as object), replicas: 2 };
    w.pass();
    w.job = running(4, { nodes: [node('train-0'), node('train-1'), node('train-2', 'draining'), node('train-3', 'drained', null)] });
    const a = w.pass();
    expect(named(a, 'deletePod')).toEqual(['train-2', 'train-3']);
    expect(a.find((x) => x.kind === 'scaleJob')).toEqual({ kind: 'scaleJob', jobId: JOB_ID, minNodes: 1, maxNodes: 2 });
    expect(kinds(a)).not.toContain('createPod');
    w.job = running(2);
    w.settle();
    expect(w.podNames()).toEqual(['train-0', 'train-1']);
  });

  it('down: a drained node the job forgot counts as let go', () => {
    const w = steady(2);
    w.resource.spec = { ...(w.resource.spec as object), replicas: 1 };
    w.pass();
    w.job = running(2, { nodes: [node('train-0')] });
    expect(named(w.pass(), 'deletePod')).toEqual(['train-1']);
  });

  it('down: deletes a pod whose drain outlasts its grace and the slack, not before', () => {
    const w = steady(2, { terminationGracePeriodSeconds: 30 });
    w.resource.spec = { ...(w.resource.spec as object), replicas: 1 };
    w.pass();
    w.job = running(2, { nodes: [node('train-0'), node('train-1', 'checkpointing')] });
    w.now = NOW + 25_000 + DRAIN_SLACK_MS;
    expect(named(w.pass(), 'deletePod')).toEqual([]);
    w.now += 1;
    expect(named(w.pass(), 'deletePod')).toEqual(['train-1']);
  });

  it('down: a pending pod that never joined is deleted, not drained', () => {
    const j = job({ replicas: 1 }, { nextIndex: 2 });
    const w = new World(j, [pod(j, 0), pod(j, 1, 'Pending')], running(2, { nodes: [node('train-0')] }));
    const a = w.pass();
    expect(named(a, 'deletePod')).toEqual(['train-1']);
    expect(kinds(a)).not.toContain('drainNode');
  });

  it('down, no checkpoint grace: drains with the least grace the job takes (1 s)', () => {
    const w = steady(2, { terminationGracePeriodSeconds: 0 });
    w.resource.spec = { ...(w.resource.spec as object), replicas: 1 };
    expect(w.pass().find((a) => a.kind === 'drainNode')).toMatchObject({ graceMs: 1000 });
  });
});

describe('a job that ended', () => {
  it.each(['succeeded', 'failed', 'cancelled'] as const)('%s: creates and replaces no pod, mirrors the end', (state) => {
    const w = steady(2);
    w.job = running(2, { state });
    w.setPhase('train-0', state === 'succeeded' ? 'Succeeded' : 'Failed');
    const a = w.pass();
    expect(kinds(a)).toEqual(['patchStatus']);
    expect(w.resource.status?.state).toBe(state);
    expect(w.pass()).toEqual([]);
  });

  it('is not started again when its workflow is gone (retention) and its status says it ended', () => {
    const w = new World(job({}, { state: 'succeeded', jobId: JOB_ID }), [], 'absent');
    const a = w.pass();
    expect(kinds(a)).not.toContain('startJob');
    expect(kinds(a)).not.toContain('createPod');
    expect(w.resource.status?.state).toBe('succeeded');
  });
});

describe('a bad spec', () => {
  it('gets one condition and one event naming the field, and nothing else, once', () => {
    const w = new World(job({ nnodes: { min: 0, max: 2 } }));
    const a = w.pass();
    expect(kinds(a)).toEqual(['patchStatus', 'event']);
    expect(a[1]).toEqual({ kind: 'event', type: 'Warning', reason: 'InvalidSpec', message: 'spec.nnodes.min: Number must be greater than or equal to 1' });
    expect(w.resource.status).toMatchObject({ state: 'invalid', message: 'spec.nnodes.min: Number must be greater than or equal to 1', conditions: [{ type: 'SpecValid', status: 'False', reason: 'InvalidSpec' }] });
    expect(w.pass()).toEqual([]);
  });

  it('once fixed, the job starts and the condition turns true', () => {
    const w = new World(job({ nnodes: { min: 3, max: 2 } }));
    w.pass();
    w.resource.spec = { ...(w.resource.spec as object), nnodes: { min: 1, max: 2 } };
    const a = w.pass();
    expect(kinds(a)).toContain('startJob');
    expect(w.resource.status).toMatchObject({ state: 'pending', message: '', conditions: [{ type: 'SpecValid', status: 'True' }] });
  });
});

describe('deleting the TelasticJob', () => {
  const deleting = (w: World) => (w.resource.metadata.deletionTimestamp = new Date(w.now).toISOString());

  it('cancels the job (its time saved first), lets its pods end, deletes them, then drops the finalizer', () => {
    const w = steady(2);
    deleting(w);
    expect(w.pass()).toEqual([{ kind: 'patchStatus', status: { cancelRequestedAt: new Date(NOW).toISOString() } }, { kind: 'cancelJob', jobId: JOB_ID }]);
    // Not confirmed yet: the cancel is sent again; nothing else.
    expect(w.pass()).toEqual([{ kind: 'cancelJob', jobId: JOB_ID }]);
    w.job = running(2, { state: 'cancelled' });
    expect(w.pass()).toEqual([]); // their agents are ending
    w.setPhase('train-0', 'Failed');
    expect(w.pass()).toEqual([{ kind: 'deletePod', name: 'train-0', why: 'the TelasticJob was deleted' }]);
    w.setPhase('train-1', 'Failed');
    expect(kinds(w.pass())).toEqual(['deletePod']);
    // Gone (their grace over): only then the resource goes.
    expect(w.pass()).toEqual([{ kind: 'removeFinalizer' }]);
  });

  it('deletes pods still running a grace (plus 5 s) after the cancel', () => {
    const w = steady(2, { terminationGracePeriodSeconds: 10 });
    deleting(w);
    w.pass();
    w.job = running(2, { state: 'cancelled' });
    w.now = NOW + 15_000;
    expect(w.pass()).toEqual([]);
    w.now += 1;
    expect(named(w.pass(), 'deletePod')).toEqual(['train-0', 'train-1']);
    expect(kinds(w.pass())).toEqual(['removeFinalizer']);
  });

  it('of a job that already ended: deletes its pods at once, then drops the finalizer', () => {
    const w = steady(1);
    w.job = running(1, { state: 'succeeded' });
    deleting(w);
    expect(kinds(w.pass())).toEqual(['deletePod']);
    expect(kinds(w.pass())).toEqual(['removeFinalizer']);
  });

  it('gives up on a cancel nobody confirms after the patience, with a warning', () => {
    const w = steady(1);
    deleting(w);
    w.pass();
    w.job = 'unknown';
    w.now = NOW + DELETE_PATIENCE_MS;
    expect(w.pass()).toEqual([{ kind: 'cancelJob', jobId: JOB_ID }]);
    w.now += 1;
    const a = w.pass();
    expect(kinds(a)).toEqual(['deletePod', 'event', 'patchStatus']);
    expect(a[1]).toMatchObject({ type: 'Warning', reason: 'CancelUnconfirmed' });
    expect(w.pass()).toEqual([{ kind: 'removeFinalizer' }]);
  });

  it('of a bad spec, or without the finalizer: nothing to cancel, or nothing to do', () => {
    const bad = new World(job({ image: '' }, undefined, { deletionTimestamp: new Date(NOW).toISOString() }), [], 'absent');
    expect(bad.pass()).toEqual([{ kind: 'removeFinalizer' }]);
    const foreign = new World(job({}, undefined, { finalizers: [], deletionTimestamp: new Date(NOW).toISOString() }), [], running(1));
    expect(foreign.pass()).toEqual([]);
  });
});

describe('idempotence', () => {
  const worlds: Array<[string, () => World]> = [
    ['a new job', () => new World(job({ replicas: 3 }))],
    ['a steady job', () => steady(3)],
    ['a job with a failed pod', () => { const w = steady(3); w.setPhase('train-1', 'Failed'); return w; }],
    ['a job scaled down', () => { const w = steady(3); w.resource.spec = { ...(w.resource.spec as object), replicas: 1 }; return w; }],
    ['a job scaled up', () => { const w = steady(1); w.resource.spec = { ...(w.resource.spec as object), replicas: 3 }; return w; }],
    ['a bad spec', () => new World(job({ command: [] }))],
  ];

  it.each(worlds)('%s: passes reach a fixed point, and none repeats a pod, a drain or a start', (_what, make) => {
    const w = make();
    const passes = w.settle();
    const all = passes.flat();
    for (const kind of ['createPod', 'deletePod', 'drainNode', 'markDraining'] as const) {
      const names = named(all, kind);
      expect(new Set(names).size).toBe(names.length);
    }
    expect(kinds(all).filter((k) => k === 'startJob').length).toBeLessThanOrEqual(1);
    expect(reconcile({ resource: w.resource, pods: w.pods, job: w.job, now: w.now }, ENV)).toEqual([]);
  });

  it('never creates a pod it already created (same names on a retried pass)', () => {
    const j = job({ replicas: 2 });
    const a = reconcile({ resource: j, pods: [], job: 'absent', now: NOW }, ENV);
    const b = reconcile({ resource: j, pods: [], job: 'absent', now: NOW }, ENV);
    expect(named(a, 'createPod')).toEqual(named(b, 'createPod'));
    expect(a[0]).toEqual({ kind: 'startJob', spec: expect.objectContaining({ jobId: `ml.train.${UID.slice(0, 8)}` }) });
    expect(j.metadata.finalizers).toEqual([FINALIZER]);
  });
});
