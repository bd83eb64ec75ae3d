/** The status object (DESIGN.md: `telastic status JOB --json` = the `status` query). */
import { applyDrain, applyJoin, settleFailure } from '../../src/job/decide';
import { jobSpecSchema, type JobSpecInput } from '../../src/job/spec';
import { initialState, type Failure, type JobState, type NodeRecord } from '../../src/job/state';
import { toStatus, type NodeStatus } from '../../src/job/status';

function state(over: Partial<JobState> = {}, specOver: Partial<JobSpecInput> = {}): JobState {
  const spec = jobSpecSchema.parse({
    jobId: 'job1',
    minNodes: 1,
    maxNodes: 2,
    nprocPerNode: 2,
    maxRestarts: 3,
    entrypoint: { script: 'train.py', args: [] },
    rdzv: {},
    ...specOver,
  });
  return { ...initialState(spec, 0), ...over };
}

function node(nodeId: string, slots = 2): NodeRecord {
  return { nodeId, address: `${nodeId}.local`, slots, joinedAt: 0 };
}

const byId = (nodes: NodeStatus[]) => Object.fromEntries(nodes.map((n) => [n.nodeId, n]));

describe('toStatus', () => {
  it('has exactly the fields of the DESIGN.md status object', () => {
    const st = toStatus(state());
    expect(Object.keys(st).sort()).toEqual(
      [
        'jobId',
        'state',
        'round',
        'restarts',
        'maxRestarts',
        'minNodes',
        'maxNodes',
        'worldSize',
        'nodes',
        'spares',
        'lastFailure',
        'checkpoint',
      ].sort(),
    );
  });

  it('a fresh job', () => {
    expect(toStatus(state({}, { minNodes: 2, maxNodes: 4, maxRestarts: 5 }))).toEqual({
      jobId: 'job1',
      state: 'waiting',
      round: 0,
      restarts: 0,
      maxRestarts: 5,
      minNodes: 2,
      maxNodes: 4,
      worldSize: 0,
      nodes: [],
      spares: [],
      lastFailure: null,
      checkpoint: null,
    });
  });

  it('is plain JSON (round-trips unchanged)', () => {
    const s = state({
      phase: 'running',
      round: 2,
      members: [node('a')],
      waiting: [node('w')],
      lastFailure: { nodeId: 'a', rank: 0, exitCode: 1, signal: null, message: 'boom', round: 1 },
      checkpoint: { path: '/c/step-10', step: 10, time: '2024-01-01T00:00:00.000Z' },
    });
    const st = toStatus(s);
    expect(JSON.parse(JSON.stringify(st))).toEqual(st);
  });

  it('running members: group rank in order, address, state running; worldSize sums their slots', () => {
    const st = toStatus(state({ phase: 'running', round: 3, members: [node('b', 3), node('a', 2)] }, { maxNodes: 4 }));
    expect(st.nodes).toEqual([
      { nodeId: 'b', address: 'b.local', groupRank: 0, state: 'running' },
      { nodeId: 'a', address: 'a.local', groupRank: 1, state: 'running' },
    ]);
    expect(st.worldSize).toBe(5);
    expect(st.round).toBe(3);
    expect(st.state).toBe('running');
  });

  it('members outside the running phase are preparing', () => {
    for (const phase of ['rendezvous', 'restarting'] as const) {
      const st = toStatus(state({ phase, members: [node('a')] }));
      expect(st.nodes[0].state).toBe('preparing');
    }
  });

  it('a member whose workers exited 0 is succeeded', () => {
    const st = toStatus(state({ phase: 'running', members: [node('a'), node('b')], finished: ['b'] }));
    expect(byId(st.nodes).a.state).toBe('running');
    expect(byId(st.nodes).b.state).toBe('succeeded');
  });

  it('a member with a pending drain is draining', () => {
    const s = applyDrain(state({ phase: 'running', members: [node('a'), node('b')] }), 'a');
    const st = toStatus(s);
    expect(byId(st.nodes).a).toEqual({ nodeId: 'a', address: 'a.local', groupRank: 0, state: 'draining' });
    expect(byId(st.nodes).b.state).toBe('running');
  });

  it('waiting nodes are waiting while the round has room, and not spares', () => {
    const st = toStatus(state({ phase: 'running', members: [node('a')], waiting: [node('w')] }, { maxNodes: 2 }));
    expect(byId(st.nodes).w).toEqual({ nodeId: 'w', address: 'w.local', groupRank: null, state: 'waiting' });
    expect(st.spares).toEqual([]);
  });

  it('waiting nodes are hot spares once the round is full', () => {
    const st = toStatus(
      state({ phase: 'running', members: [node('a'), node('b')], waiting: [node('s1'), node('s2')] }, { maxNodes: 2 }),
    );
    expect(byId(st.nodes).s1.state).toBe('spare');
    expect(byId(st.nodes).s2.state).toBe('spare');
    expect(st.spares).toEqual(['s1', 's2']);
    // Spares are not in the world.
    expect(st.worldSize).toBe(4);
  });

  it('departed nodes show why: lost, drained (and left), with no address or group rank', () => {
    const st = toStatus(
      state({
        departed: [
          { nodeId: 'x', reason: 'lost', round: 1 },
          { nodeId: 'y', reason: 'drained', round: 2 },
          { nodeId: 'z', reason: 'left', round: 2 },
        ],
      }),
    );
    expect(st.nodes).toEqual([
      { nodeId: 'x', address: null, groupRank: null, state: 'lost' },
      { nodeId: 'y', address: null, groupRank: null, state: 'drained' },
      { nodeId: 'z', address: null, groupRank: null, state: 'left' },
    ]);
  });

  it('a waiting node drained at once shows as drained', () => {
    const s = applyDrain(state({ members: [node('a')], waiting: [node('w')] }), 'w');
    expect(byId(toStatus(s).nodes).w.state).toBe('drained');
  });

  it('lists each node once, members then waiting then departed', () => {
    const st = toStatus(
      state({
        phase: 'running',
        members: [node('a'), node('b')],
        waiting: [node('c')],
        departed: [{ nodeId: 'd', reason: 'lost', round: 1 }],
      }),
    );
    expect(st.nodes.map((n) => n.nodeId)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('lastFailure carries nodeId, rank, exitCode, signal, message (not the round)', () => {
    const f: Failure = { nodeId: 'a', rank: 1, exitCode: null, signal: 'SIGSEGV', message: 'segfault', round: 4 };
    const settled = settleFailure(state({ pendingFailure: f })).state;
    const st = toStatus(settled);
    expect(st.lastFailure).toEqual({ nodeId: 'a', rank: 1, exitCode: null, signal: 'SIGSEGV', message: 'segfault' });
    expect(st.restarts).toBe(1);
  });

  it('a pending (unsettled) failure is not yet the lastFailure', () => {
    const s = applyJoin(state({ members: [node('a')] }), { nodeId: 'a', address: 'a2', slots: 2, role: 'default', entrypoint: { script: 'train.py', args: [], module: false, noPython: false } }, 1);
    const st = toStatus(s);
    expect(st.lastFailure).toBeNull();
    expect(st.restarts).toBe(0);
  });

  it('reports the checkpoint as {path, step, time}', () => {
    const checkpoint = { path: '/c/step-10', step: 10, time: '2024-01-01T00:00:00.000Z' };
    expect(toStatus(state({ checkpoint })).checkpoint).toEqual(checkpoint);
  });

  it('reports final phases as the job state', () => {
    for (const phase of ['succeeded', 'failed', 'cancelled'] as const) {
      expect(toStatus(state({ phase })).state).toBe(phase);
    }
  });
});
