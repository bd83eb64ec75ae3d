/** Pure membership decisions (src/job/decide.ts): joins, departures, drains, scale. */
import {
  applyDeparture,
  applyDrain,
  applyJoin,
  applyScale,
  nodeLost,
  settleMembership,
  validateDrain,
  validateJoin,
  validateScale,
} from '../../src/job/decide';
import { ids, join, node, state, workerFailure } from './fixtures';

describe('validateJoin', () => {
  const s = state();

  it('accepts a node whose launch matches the job', () => {
    expect(validateJoin(s, join('a'))).toBeNull();
  });

  it('rejects a different nproc-per-node', () => {
    expect(validateJoin(s, join('a', { slots: 4 }))).toBe('nproc-per-node 4 does not match job job1 (2)');
  });

  it('rejects a different script', () => {
    const req = join('a', { entrypoint: { script: 'other.py', args: ['--epochs', '3'], module: false, noPython: false } });
    expect(validateJoin(s, req)).toBe('script other.py does not match job job1 (train.py)');
  });

  it('rejects different script args', () => {
    const req = join('a', { entrypoint: { script: 'train.py', args: ['--epochs', '4'], module: false, noPython: false } });
    expect(validateJoin(s, req)).toBe('script args ["--epochs","4"] do not match job job1 (["--epochs","3"])');
  });

  it('rejects the same args in a different order or count', () => {
    const reorder = join('a', { entrypoint: { script: 'train.py', args: ['3', '--epochs'], module: false, noPython: false } });
    const extra = join('a', { entrypoint: { script: 'train.py', args: ['--epochs', '3', 'x'], module: false, noPython: false } });
    expect(validateJoin(s, reorder)).toMatch(/^script args /);
    expect(validateJoin(s, extra)).toMatch(/^script args /);
  });

  it('rejects a different -m / --no-python launch mode', () => {
    const m = join('a', { entrypoint: { script: 'train.py', args: ['--epochs', '3'], module: true, noPython: false } });
    const np = join('a', { entrypoint: { script: 'train.py', args: ['--epochs', '3'], module: false, noPython: true } });
    expect(validateJoin(s, m)).toBe('launch mode (-m / --no-python) does not match job job1');
    expect(validateJoin(s, np)).toBe('launch mode (-m / --no-python) does not match job job1');
  });

  it('rejects a different role', () => {
    expect(validateJoin(s, join('a', { role: 'trainer' }))).toBe('role trainer does not match job job1 (default)');
  });

  it('gives one line for every mismatch', () => {
    const reqs = [
      join('a', { slots: 1 }),
      join('a', { role: 'x' }),
      join('a', { entrypoint: { script: 'b.py', args: [], module: true, noPython: false } }),
    ];
    for (const r of reqs) {
      const msg = validateJoin(s, r);
      expect(msg).not.toBeNull();
      expect(msg).not.toContain('\n');
    }
  });

  it('does not change the state', () => {
    const before = JSON.stringify(s);
    validateJoin(s, join('a', { slots: 9 }));
    expect(JSON.stringify(s)).toBe(before);
  });
});

describe('applyJoin', () => {
  it('appends newcomers to waiting in join order', () => {
    let s = state();
    s = applyJoin(s, join('a'), 10);
    s = applyJoin(s, join('b'), 20);
    s = applyJoin(s, join('c'), 30);
    expect(ids(s.waiting)).toEqual(['a', 'b', 'c']);
    expect(s.waiting[1]).toEqual({ nodeId: 'b', address: 'b.local', slots: 2, joinedAt: 20 });
    expect(s.members).toEqual([]);
    expect(s.pendingFailure).toBeNull();
  });

  it('does not mutate the input state', () => {
    const s = state({ waiting: [node('a')] });
    const before = JSON.stringify(s);
    applyJoin(s, join('b'), 5);
    applyJoin(s, join('a', { address: 'new' }), 5);
    expect(JSON.stringify(s)).toBe(before);
  });

  it('a waiting node that joins again keeps its position and first join time, with its new address', () => {
    let s = state({ waiting: [node('a', 2, 1), node('b', 2, 2), node('c', 2, 3)] });
    s = applyJoin(s, join('b', { address: '10.0.0.9' }), 99);
    expect(ids(s.waiting)).toEqual(['a', 'b', 'c']);
    expect(s.waiting[1]).toEqual({ nodeId: 'b', address: '10.0.0.9', slots: 2, joinedAt: 2 });
    expect(s.pendingFailure).toBeNull();
    expect(s.restarts).toBe(0);
  });

  it('a member joining again means its earlier incarnation was lost', () => {
    let s = state({ round: 3, members: [node('a'), node('b'), node('c')], waiting: [node('w')] });
    s = applyJoin(s, join('b', { address: 'b2' }), 50);
    expect(ids(s.members)).toEqual(['a', 'c']);
    expect(ids(s.waiting)).toEqual(['w', 'b']);
    expect(s.waiting[1]).toEqual({ nodeId: 'b', address: 'b2', slots: 2, joinedAt: 50 });
    expect(s.pendingFailure).toEqual({
      nodeId: 'b',
      rank: null,
      exitCode: null,
      signal: null,
      message: 'node lost: its agent restarted and joined again',
      round: 3,
    });
    // The restart itself is accounted later, at settleFailure.
    expect(s.restarts).toBe(0);
  });

  it('the same run of an agent joining again (a doubled join) changes nothing; another run is a lost node', () => {
    const s0 = state({ round: 3, members: [node('a'), { ...node('b'), incarnation: 'run-1' }] });
    expect(applyJoin(s0, join('b', { incarnation: 'run-1' }), 50)).toBe(s0);
    const restarted = applyJoin(s0, join('b', { incarnation: 'run-2' }), 50);
    expect([ids(restarted.members), ids(restarted.waiting), restarted.pendingFailure?.message]).toEqual([['a'], ['b'], 'node lost: its agent restarted and joined again']);
    expect(restarted.waiting[0].incarnation).toBe('run-2');
  });

  it('a member re-join is blamed over a worker failure it provoked on a healthy node', () => {
    const victim = workerFailure('a', 0);
    let s = state({ members: [node('a'), node('b')], pendingFailure: victim });
    s = applyJoin(s, join('b'), 5);
    expect(s.pendingFailure?.nodeId).toBe('b');
    expect(s.pendingFailure?.rank).toBeNull();
  });

  it('a member re-join does not displace an earlier node loss as root cause', () => {
    let s = state({ members: [node('a'), node('b')] });
    s = { ...s, pendingFailure: nodeLost(s, 'a', 'no heartbeat within 10s') };
    s = applyJoin(s, join('b'), 5);
    expect(s.pendingFailure?.nodeId).toBe('a');
  });

  it('clears the departed entry of a node that comes back', () => {
    let s = state({ departed: [{ nodeId: 'x', reason: 'lost', round: 1 }, { nodeId: 'a', reason: 'drained', round: 2 }] });
    s = applyJoin(s, join('a'), 5);
    expect(s.departed).toEqual([{ nodeId: 'x', reason: 'lost', round: 1 }]);
    expect(ids(s.waiting)).toEqual(['a']);
  });
});

describe('applyDeparture', () => {
  it('removes the node everywhere and records why, newest last, once', () => {
    let s = state({
      round: 2,
      members: [node('a'), node('b')],
      waiting: [node('c')],
      drains: ['a'],
      departed: [{ nodeId: 'a', reason: 'lost', round: 1 }, { nodeId: 'z', reason: 'left', round: 1 }],
    });
    s = applyDeparture(s, 'a', 'drained');
    expect(ids(s.members)).toEqual(['b']);
    expect(s.drains).toEqual([]);
    expect(s.departed).toEqual([
      { nodeId: 'z', reason: 'left', round: 1 },
      { nodeId: 'a', reason: 'drained', round: 2 },
    ]);
    s = applyDeparture(s, 'c', 'lost');
    expect(s.waiting).toEqual([]);
    expect(s.departed[2]).toEqual({ nodeId: 'c', reason: 'lost', round: 2 });
  });

  it('keeps a bounded list of departures', () => {
    let s = state();
    for (let i = 0; i < 80; i++) s = applyDeparture(s, `n${i}`, 'left');
    expect(s.departed.length).toBeLessThanOrEqual(50);
    expect(s.departed[s.departed.length - 1].nodeId).toBe('n79');
  });
});

describe('validateDrain / applyDrain', () => {
  const base = () => state({ members: [node('a'), node('b')], waiting: [node('w1'), node('w2')] });

  it('accepts members and waiting nodes', () => {
    expect(validateDrain(base(), 'a')).toBeNull();
    expect(validateDrain(base(), 'w2')).toBeNull();
  });

  it('rejects an unknown node with a message naming the node and the job', () => {
    const msg = validateDrain(base(), 'ghost');
    expect(msg).toBe('node ghost is not in job job1 (nodes: a, b, w1, w2)');
    expect(validateDrain(state(), 'ghost')).toBe('node ghost is not in job job1 (nodes: none)');
  });

  it('an unknown node changes nothing', () => {
    const s = base();
    expect(applyDrain(s, 'ghost')).toEqual(s);
  });

  it('a member is drained at the round boundary, not at once', () => {
    const s = applyDrain(base(), 'b');
    expect(s.drains).toEqual(['b']);
    expect(ids(s.members)).toEqual(['a', 'b']);
    expect(s.departed).toEqual([]);
    const settled = settleMembership(s);
    expect(ids(settled.members)).toEqual(['a']);
    expect(settled.drains).toEqual([]);
    expect(settled.departed).toEqual([{ nodeId: 'b', reason: 'drained', round: 0 }]);
  });

  it('draining a member twice is idempotent', () => {
    const once = applyDrain(base(), 'a');
    const twice = applyDrain(once, 'a');
    expect(twice).toEqual(once);
    expect(twice.drains).toEqual(['a']);
    expect(validateDrain(once, 'a')).toBeNull();
  });

  it('a waiting node leaves at once as drained', () => {
    const s = applyDrain({ ...base(), round: 4 }, 'w1');
    expect(ids(s.waiting)).toEqual(['w2']);
    expect(s.drains).toEqual([]);
    expect(s.departed).toEqual([{ nodeId: 'w1', reason: 'drained', round: 4 }]);
    expect(ids(s.members)).toEqual(['a', 'b']);
  });
});

describe('validateScale / applyScale', () => {
  const s = state({}, { minNodes: 2, maxNodes: 4 });

  it('accepts and applies a consistent range', () => {
    expect(validateScale(s, { minNodes: 1, maxNodes: 8 })).toBeNull();
    const next = applyScale(s, { minNodes: 1, maxNodes: 8 });
    expect(next.spec.minNodes).toBe(1);
    expect(next.spec.maxNodes).toBe(8);
  });

  it('keeps the side that is not given', () => {
    expect(applyScale(s, { maxNodes: 6 }).spec).toMatchObject({ minNodes: 2, maxNodes: 6 });
    expect(applyScale(s, { minNodes: 3 }).spec).toMatchObject({ minNodes: 3, maxNodes: 4 });
  });

  it('rejects min > max, also against the current other side, and changes nothing', () => {
    expect(validateScale(s, { minNodes: 5, maxNodes: 3 })).toBe('minNodes 5 exceeds maxNodes 3');
    expect(validateScale(s, { maxNodes: 1 })).toBe('minNodes 2 exceeds maxNodes 1');
    expect(validateScale(s, { minNodes: 5 })).toBe('minNodes 5 exceeds maxNodes 4');
    expect(applyScale(s, { minNodes: 5, maxNodes: 3 })).toBe(s);
    expect(applyScale(s, { maxNodes: 1 })).toBe(s);
    expect(s.spec).toMatchObject({ minNodes: 2, maxNodes: 4 });
  });

  it('accepts min == max', () => {
    expect(validateScale(s, { minNodes: 4 })).toBeNull();
  });

  it('scaling is a membership change: no restart counted', () => {
    expect(applyScale(s, { maxNodes: 2 }).restarts).toBe(0);
  });
});

describe('a node leaving on its own', () => {
  const dd = jest.requireActual('../../src/job/decide') as typeof import('../../src/job/decide');
  const st = jest.requireActual('../../src/job/state') as typeof import('../../src/job/state');
  const spec = { jobId: 'j', minNodes: 1, maxNodes: 3, nprocPerNode: 1, maxRestarts: 0, maxRestartsWithoutProgress: 3, role: 'default', entrypoint: { script: 's', args: [], module: false, noPython: false }, rdzv: { joinTimeoutMs: 1, lastCallTimeoutMs: 1, heartbeatTimeoutMs: 1, prepareTimeoutMs: 1, groupSize: 64 }, shutdownTimeoutMs: 1, searchAttributes: false };
  const node = (nodeId: string) => ({ nodeId, address: 'h', slots: 1, joinedAt: 0 });
  test('a member that leaves departs as left at the round boundary; a drained one as drained', () => {
    let s = { ...st.initialState(spec, 0), members: [node('a'), node('b'), node('c')] };
    s = dd.applyDrain(s, 'a', 'left');
    s = dd.applyDrain(s, 'b');
    expect(dd.interruptReason(s, ['a', 'b', 'c'])).toMatch(/^drain of a$/);
    s = dd.settleMembership(s);
    expect(s.members.map((m) => m.nodeId)).toEqual(['c']);
    expect(s.departed.map((d) => [d.nodeId, d.reason])).toEqual([['a', 'left'], ['b', 'drained']]);
    expect(s.leaving).toEqual([]);
  });
  test('a waiting node that leaves departs at once as left', () => {
    const s = dd.applyDrain({ ...st.initialState(spec, 0), members: [node('a')], waiting: [node('w')] }, 'w', 'left');
    expect(s.waiting).toEqual([]);
    expect(s.departed).toEqual([{ nodeId: 'w', reason: 'left', round: 0 }]);
  });
});
