import { allocate, depart, held, jobGone, jobRequest, leaseLost, poolNodeView, register } from '../../src/pool/decide';
import { initialPoolState, jobRequestSchema, type PoolState } from '../../src/pool/state';

const node = (nodeId: string, slots = 2, incarnation = 'i1') => ({ nodeId, address: `${nodeId}.local`, slots, labels: {}, incarnation, heartbeatTimeoutMs: 10_000 });
const want = (jobId: string, minNodes: number, maxNodes: number, extra: Partial<{ slots: number; release: { nodeId: string; reason: 'lost' | 'drained' | 'left' | 'released' }[]; done: boolean }> = {}) =>
  jobRequestSchema.parse({ jobId, minNodes, maxNodes, slots: 1, ...extra });

function pool(...ids: string[]): PoolState {
  return ids.reduce((s, id, i) => register(s, node(id), i), initialPoolState('p'));
}
const owners = (s: PoolState) => Object.fromEntries(s.nodes.map((n) => [n.nodeId, n.jobId ?? n.state]));

describe('allocate', () => {
  it('gives each job its minimum in arrival order, then grows them in arrival order', () => {
    let s = pool('n1', 'n2', 'n3');
    s = jobRequest(s, want('A', 1, 2), 10);
    s = jobRequest(s, want('B', 1, 2), 11);
    const r = allocate(s, 12);
    expect(owners(r.state)).toEqual({ n1: 'A', n2: 'B', n3: 'A' });
    expect(r.grants).toEqual([
      { jobId: 'A', nodes: [{ nodeId: 'n1', address: 'n1.local', slots: 2 }, { nodeId: 'n3', address: 'n3.local', slots: 2 }] },
      { jobId: 'B', nodes: [{ nodeId: 'n2', address: 'n2.local', slots: 2 }] },
    ]);
    expect(allocate(r.state, 13).grants).toEqual([]);
  });

  it('lets nobody grow while a job waits for its minimum, and serves nobody behind that job', () => {
    let s = pool('n1', 'n2');
    s = jobRequest(s, want('big', 3, 3), 1);
    s = jobRequest(s, want('small', 1, 1), 2);
    const r = allocate(s, 3);
    expect(owners(r.state)).toEqual({ n1: 'big', n2: 'big' });
    // A third node completes the big job's minimum; then the small job is served.
    const s2 = allocate(register(r.state, node('n3'), 4), 5).state;
    expect(owners(s2)).toEqual({ n1: 'big', n2: 'big', n3: 'big' });
    expect(owners(allocate(register(s2, node('n4'), 6), 7).state).n4).toBe('small');
  });

  it('grants only nodes with enough slots, and never a node the job drained', () => {
    let s = initialPoolState('p');
    s = register(s, node('tiny', 1), 0);
    s = register(s, node('wide', 4), 0);
    s = jobRequest(s, want('A', 1, 2, { slots: 2 }), 1);
    s = allocate(s, 2).state;
    expect(owners(s)).toEqual({ tiny: 'free', wide: 'A' });
    s = jobRequest(s, want('A', 1, 2, { slots: 2, release: [{ nodeId: 'wide', reason: 'drained' }] }), 3);
    s = jobRequest(s, want('B', 1, 1, { slots: 4 }), 4);
    expect(allocate(s, 5).grants).toEqual([]); // A waits for its minimum, first come first served
    s = jobRequest(s, want('A', 1, 2, { slots: 2, done: true }), 6);
    expect(allocate(s, 7).grants).toEqual([{ jobId: 'B', nodes: [{ nodeId: 'wide', address: 'wide.local', slots: 4 }] }]);
  });
});

describe('jobs giving nodes back', () => {
  const granted = () => allocate(jobRequest(pool('n1', 'n2'), want('A', 2, 2), 1), 2).state;

  it('frees every node of a job that ended, and ignores its late requests', () => {
    let s = jobRequest(granted(), want('A', 2, 2, { done: true }), 3);
    expect(owners(s)).toEqual({ n1: 'free', n2: 'free' });
    expect(s.jobs).toEqual([]);
    s = jobRequest(s, want('A', 2, 2), 4);
    expect(s.jobs).toEqual([]);
    expect(allocate(s, 5).grants).toEqual([]);
  });

  it('marks a node the job lost as lost (its agent must register again), and frees a released one', () => {
    let s = jobRequest(granted(), want('A', 1, 2, { release: [{ nodeId: 'n1', reason: 'lost' }, { nodeId: 'n2', reason: 'released' }] }), 3);
    expect(owners(s)).toEqual({ n1: 'lost', n2: 'free' });
    expect(allocate(s, 4).grants).toEqual([{ jobId: 'A', nodes: [{ nodeId: 'n2', address: 'n2.local', slots: 2 }] }]);
    s = register(s, node('n1'), 5); // the same agent, alive after all
    expect(poolNodeView(s, 'n1')).toEqual({ state: 'free', jobId: null, incarnation: 'i1' });
  });

  it('ignores a release of a node the job no longer holds', () => {
    let s = granted();
    s = register(s, node('n1', 2, 'i2'), 3); // n1's agent restarted: free again
    s = jobRequest(s, want('A', 1, 1), 4); // A, scaled down, is content with n2
    s = jobRequest(s, want('B', 1, 1), 4);
    s = allocate(s, 5).state;
    expect(owners(s).n1).toBe('B');
    s = jobRequest(s, want('A', 2, 2, { release: [{ nodeId: 'n1', reason: 'lost' }] }), 6);
    expect(owners(s).n1).toBe('B');
  });

  it('returns the grants of a job that cannot be reached', () => {
    const s = jobGone(granted(), 'A', 3);
    expect(owners(s)).toEqual({ n1: 'free', n2: 'free' });
    expect(s.ended).toContain('A');
  });
});

describe('agents', () => {
  it('ignores a repeated register and treats a new incarnation as a fresh, free node', () => {
    let s = allocate(jobRequest(pool('n1'), want('A', 1, 1), 1), 2).state;
    expect(register(s, node('n1'), 3)).toBe(s);
    s = register(s, node('n1', 2, 'i2'), 3);
    expect(poolNodeView(s, 'n1')).toEqual({ state: 'free', jobId: null, incarnation: 'i2' });
    expect(held(s, 'A')).toEqual([]);
  });

  it('drains a granted node through its job and drops it once released; a free node leaves at once', () => {
    let s = allocate(jobRequest(pool('n1', 'n2'), want('A', 1, 1), 1), 2).state;
    const d = depart(s, { nodeId: 'n1', incarnation: 'i1' }, 3);
    expect(d.leave).toEqual({ jobId: 'A', nodeId: 'n1' });
    s = d.state;
    expect(poolNodeView(s, 'n1').state).toBe('draining');
    expect(allocate(s, 4).grants).toEqual([]); // a draining node still counts as the job's
    s = jobRequest(s, want('A', 1, 1, { release: [{ nodeId: 'n1', reason: 'left' }] }), 5);
    expect(poolNodeView(s, 'n1').state).toBe('unknown');
    s = depart(s, { nodeId: 'n2', incarnation: 'i1' }, 6).state;
    expect(s.nodes).toEqual([]);
  });

  it('keeps a node whose lease lapsed its job\'s until the job lets it go; its agent, back, returns to that job', () => {
    let s = allocate(jobRequest(pool('n1', 'n2'), want('A', 1, 1), 1), 2).state;
    s = leaseLost(s, 'n1', 'i1', 3); // a Temporal outage longer than the lease's heartbeat timeout, say
    expect(poolNodeView(s, 'n1')).toEqual({ state: 'lost', jobId: 'A', incarnation: 'i1' });
    expect(held(s, 'A').map((n) => n.nodeId)).toEqual(['n1']);
    s = jobRequest(s, want('B', 1, 1), 4);
    expect(allocate(s, 5).grants).toEqual([{ jobId: 'B', nodes: [{ nodeId: 'n2', address: 'n2.local', slots: 2 }] }]);
    expect(poolNodeView(register(s, node('n1'), 6), 'n1')).toEqual({ state: 'granted', jobId: 'A', incarnation: 'i1' });
    // The job let it go meanwhile: lost to everyone until its agent registers again, then free.
    s = jobRequest(s, want('A', 1, 1, { release: [{ nodeId: 'n1', reason: 'released' }] }), 7);
    expect(poolNodeView(s, 'n1')).toEqual({ state: 'lost', jobId: null, incarnation: 'i1' });
    expect(poolNodeView(register(s, node('n1'), 8), 'n1').state).toBe('free');
  });

  it('ignores a depart or lost lease of an earlier incarnation', () => {
    let s = register(pool('n1'), node('n1', 2, 'i2'), 1);
    expect(depart(s, { nodeId: 'n1', incarnation: 'i1' }, 2).state).toBe(s);
    s = leaseLost(s, 'n1', 'i1', 2);
    expect(poolNodeView(s, 'n1').state).toBe('free');
    s = leaseLost(s, 'n1', 'i2', 3);
    expect(poolNodeView(s, 'n1')).toEqual({ state: 'lost', jobId: null, incarnation: 'i2' });
    expect(allocate(jobRequest(s, want('A', 1, 1), 4), 5).grants).toEqual([]);
  });
});
