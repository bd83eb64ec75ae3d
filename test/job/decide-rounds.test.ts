/** Pure round decisions (src/job/decide.ts): planning, ranks, interrupts, blame, restarts. */
import {
  applyDeparture,
  applyJoin,
  applyScale,
  assignRanks,
  available,
  describeFailure,
  interruptReason,
  joinTimeoutReason,
  mergeCause,
  nodeLost,
  planRound,
  settleFailure,
  settleMembership,
} from '../../src/job/decide';
import { type JobSpecInput } from '../../src/job/spec';
import { type Failure, type JobState } from '../../src/job/state';
import { ids, join, node, state, workerFailure } from './fixtures';

describe('planRound', () => {
  it('members keep their order, newcomers are appended up to maxNodes, the rest are spares', () => {
    const s = state({ members: [node('m2'), node('m1')], waiting: [node('w1'), node('w2'), node('w3')] }, { maxNodes: 3 });
    const plan = planRound(s);
    expect(ids(plan.participants)).toEqual(['m2', 'm1', 'w1']);
    expect(ids(plan.spares)).toEqual(['w2', 'w3']);
  });

  it('exhaustively: participants are the first maxNodes of members++waiting, the oldest member is group rank 0', () => {
    let cases = 0;
    for (let nm = 0; nm <= 4; nm++)
      for (let nw = 0; nw <= 4; nw++)
        for (let max = 1; max <= 4; max++) {
          const members = Array.from({ length: nm }, (_, i) => node(`m${i}`));
          const waiting = Array.from({ length: nw }, (_, i) => node(`w${i}`));
          const s = state({ members, waiting }, { minNodes: 1, maxNodes: max });
          const { participants, spares } = planRound(s);
          const all = [...ids(members), ...ids(waiting)];
          const where = `members=${nm} waiting=${nw} max=${max}`;
          expect([where, ids(participants)]).toEqual([where, all.slice(0, max)]);
          expect([where, ids(spares)]).toEqual([where, all.slice(max)]);
          expect(participants.length).toBe(Math.min(max, nm + nw));
          expect(participants.length + spares.length).toBe(available(s));
          if (nm > 0) expect([where, participants[0].nodeId]).toEqual([where, 'm0']);
          // Members come before any newcomer, in their own order.
          const firstNewcomer = ids(participants).findIndex((id) => id.startsWith('w'));
          if (firstNewcomer >= 0) expect(firstNewcomer).toBe(Math.min(nm, max));
          // No node is both a participant and a spare.
          expect(ids(participants).filter((id) => ids(spares).includes(id))).toEqual([]);
          // Pure.
          expect(ids(s.members)).toEqual(ids(members));
          expect(ids(s.waiting)).toEqual(ids(waiting));
          cases++;
        }
    expect(cases).toBe(100);
  });

  it('a hot spare replaces a lost member in the next round, behind the survivors', () => {
    let s = state({ round: 1, members: [node('a'), node('b')], waiting: [node('spare')] }, { maxNodes: 2 });
    expect(ids(planRound(s).spares)).toEqual(['spare']);
    s = applyDeparture(s, 'a', 'lost');
    expect(ids(planRound(s).participants)).toEqual(['b', 'spare']);
    expect(planRound(s).spares).toEqual([]);
  });
});

describe('settleMembership', () => {
  it('applies pending drains', () => {
    const s = settleMembership(state({ round: 2, members: [node('a'), node('b'), node('c')], drains: ['a', 'c'] }));
    expect(ids(s.members)).toEqual(['b']);
    expect(s.drains).toEqual([]);
    expect(s.departed.map((d) => [d.nodeId, d.reason])).toEqual([
      ['a', 'drained'],
      ['c', 'drained'],
    ]);
  });

  it('members beyond a shrunk maxNodes become spares at the front of waiting, in order', () => {
    const s = settleMembership(
      state({ members: [node('a'), node('b'), node('c'), node('d')], waiting: [node('w')] }, { maxNodes: 2 }),
    );
    expect(ids(s.members)).toEqual(['a', 'b']);
    expect(ids(s.waiting)).toEqual(['c', 'd', 'w']);
    expect(s.departed).toEqual([]);
  });

  it('drains are applied before the cut at maxNodes', () => {
    const s = settleMembership(
      state({ members: [node('a'), node('b'), node('c')], waiting: [node('w')], drains: ['a'] }, { maxNodes: 1 }),
    );
    expect(ids(s.members)).toEqual(['b']);
    expect(ids(s.waiting)).toEqual(['c', 'w']);
  });

  it('is a no-op without drains or excess', () => {
    const s = state({ members: [node('a')], waiting: [node('w')] }, { maxNodes: 1 });
    expect(settleMembership(s)).toEqual(s);
  });

  it('never counts a restart', () => {
    const s = settleMembership(state({ members: [node('a'), node('b')], drains: ['a'] }, { maxNodes: 1 }));
    expect(s.restarts).toBe(0);
    expect(s.pendingFailure).toBeNull();
  });
});

describe('assignRanks', () => {
  const master = { addr: '10.0.0.1', port: 29500 };

  it('gives each node its group rank, rank offset and the job-wide sizes', () => {
    const s = state({ round: 5, restarts: 2 }, { maxRestarts: 7, role: 'trainer' });
    const parts = [node('a', 2), node('b', 3), node('c', 1)];
    const as = assignRanks(s, parts, master);
    expect(as.map((a) => [a.nodeId, a.groupRank, a.rankOffset, a.localWorldSize])).toEqual([
      ['a', 0, 0, 2],
      ['b', 1, 2, 3],
      ['c', 2, 5, 1],
    ]);
    for (const a of as) {
      expect(a).toMatchObject({
        jobId: 'job1',
        round: 5,
        role: 'trainer',
        groupWorldSize: 3,
        worldSize: 6,
        masterAddr: '10.0.0.1',
        masterPort: 29500,
        restartCount: 2,
        maxRestarts: 7,
      });
      expect('checkpointDir' in a).toBe(false);
      expect('resumeFrom' in a).toBe(false);
    }
  });

  it('rank offset is the sum of the local world sizes of lower group ranks (ranks are disjoint and dense)', () => {
    const parts = [node('a', 4), node('b', 1), node('c', 2), node('d', 3)];
    const as = assignRanks(state(), parts, master);
    const ranks = as.flatMap((a) => Array.from({ length: a.localWorldSize }, (_, l) => a.rankOffset + l));
    expect(ranks).toEqual(Array.from({ length: 10 }, (_, i) => i));
    as.forEach((a, i) => expect(a.rankOffset).toBe(parts.slice(0, i).reduce((n, p) => n + p.slots, 0)));
  });

  it('includes checkpointDir and resumeFrom only when set', () => {
    const s = state({}, { checkpointDir: '/ckpt' });
    const [a] = assignRanks(s, [node('a')], master, { resumeFrom: '/ckpt/step-100' });
    expect(a.checkpointDir).toBe('/ckpt');
    expect(a.resumeFrom).toBe('/ckpt/step-100');
    const [b] = assignRanks(s, [node('a')], master);
    expect(b.checkpointDir).toBe('/ckpt');
    expect('resumeFrom' in b).toBe(false);
    const [c] = assignRanks(state(), [node('a')], master, { resumeFrom: '/x' });
    expect('checkpointDir' in c).toBe(false);
    expect(c.resumeFrom).toBe('/x');
  });

  it('carries both progress bounds to every node, and neither when the job has none', () => {
    const [a] = assignRanks(state({}, { progressTimeoutMs: 8_000, progressStartTimeoutMs: 120_000 }), [node('a')], master);
    expect(a).toMatchObject({ progressTimeoutMs: 8_000, progressStartTimeoutMs: 120_000 });
    const [b] = assignRanks(state(), [node('a')], master);
    expect(['progressTimeoutMs' in b, 'progressStartTimeoutMs' in b]).toEqual([false, false]);
  });

  it('no participants, no assignments', () => {
    expect(assignRanks(state(), [], master)).toEqual([]);
  });
});

describe('interruptReason', () => {
  const running = (over: Partial<JobState> = {}, specOver: Partial<JobSpecInput> = {}) =>
    state({ phase: 'running', round: 1, members: [node('a'), node('b')], ...over }, { maxNodes: 3, ...specOver });
  const parts = ['a', 'b'];

  it('keeps running when nothing changed', () => {
    expect(interruptReason(running(), parts)).toBeNull();
  });

  it('stops on a drain of a participant', () => {
    expect(interruptReason(running({ drains: ['b'] }), parts)).toBe('drain of b');
  });

  it('does not stop for a drain of a node outside the round', () => {
    expect(interruptReason(running({ drains: ['x'] }, { maxNodes: 2 }), parts)).toBeNull();
  });

  it('stops to admit a waiting node when there is room and nobody finished', () => {
    expect(interruptReason(running({ waiting: [node('w1'), node('w2')] }), parts)).toBe('admitting w1');
  });

  it('does not admit once a node finished: the job is ending', () => {
    expect(interruptReason(running({ waiting: [node('w')], finished: ['a'] }), parts)).toBeNull();
  });

  it('does not admit when the round is full: the joiner is a hot spare', () => {
    expect(interruptReason(running({ waiting: [node('w')] }, { maxNodes: 2 }), parts)).toBeNull();
  });

  it('admits after a scale-up makes room', () => {
    const s = applyScale(running({ waiting: [node('w')] }, { maxNodes: 2 }), { maxNodes: 3 });
    expect(interruptReason(s, parts)).toBe('admitting w');
  });

  it('stops when maxNodes shrank below the round', () => {
    const s = applyScale(running({}, { minNodes: 1 }), { maxNodes: 1 });
    expect(interruptReason(s, parts)).toBe('scaled to maxNodes 1');
  });

  it('stops when a participant is no longer a member (its agent restarted and joined again)', () => {
    const s = applyJoin(running(), join('b'), 5);
    expect(interruptReason(s, parts)).toBe('b restarted');
  });
});

describe('mergeCause', () => {
  const lostA: Failure = { nodeId: 'a', rank: null, exitCode: null, signal: null, message: 'node lost: x', round: 1 };
  const lostB: Failure = { ...lostA, nodeId: 'b' };
  const failC = workerFailure('c', 4);
  const failD = workerFailure('d', 6);

  it('takes the first failure when there is none', () => {
    expect(mergeCause(null, failC)).toBe(failC);
    expect(mergeCause(null, lostA)).toBe(lostA);
  });

  it('a lost node outranks a worker failure (blame the cause, not the victims)', () => {
    expect(mergeCause(failC, lostA)).toBe(lostA);
  });

  it('a worker failure does not displace a lost node', () => {
    expect(mergeCause(lostA, failC)).toBe(lostA);
  });

  it('the first worker failure stays', () => {
    expect(mergeCause(failC, failD)).toBe(failC);
  });

  it('the first node loss stays', () => {
    expect(mergeCause(lostA, lostB)).toBe(lostA);
  });

  it('in any arrival order, the root cause is the first lost node if any, else the first failure', () => {
    const seqs: Failure[][] = [
      [failC, failD, lostA, lostB],
      [failC, lostB, failD, lostA],
      [lostB, failC, lostA],
      [failD, failC],
    ];
    for (const seq of seqs) {
      const got = seq.reduce<Failure | null>((cur, f) => mergeCause(cur, f), null);
      const expected = seq.find((f) => f.rank === null) ?? seq[0];
      expect(got).toBe(expected);
    }
  });
});

describe('nodeLost', () => {
  it('blames the node, with no rank, in the current round', () => {
    expect(nodeLost(state({ round: 7 }), 'n1', 'no heartbeat within 10s')).toEqual({
      nodeId: 'n1',
      rank: null,
      exitCode: null,
      signal: null,
      message: 'node lost: no heartbeat within 10s',
      round: 7,
    });
  });
});

describe('settleFailure', () => {
  it('is a no-op without a pending failure', () => {
    const s = state({ restarts: 1, lastFailure: workerFailure('a', 0) });
    const r = settleFailure(s);
    expect(r.state).toBe(s);
    expect(r.exhausted).toBe(false);
  });

  it('counts one restart per episode, records the root cause and clears it', () => {
    const f = workerFailure('a', 3);
    const r = settleFailure(state({ restarts: 1, pendingFailure: f }, { maxRestarts: 3 }));
    expect(r.state.restarts).toBe(2);
    expect(r.state.lastFailure).toBe(f);
    expect(r.state.pendingFailure).toBeNull();
    expect(r.exhausted).toBe(false);
    // Settling again without a new failure counts nothing.
    const again = settleFailure(r.state);
    expect(again.state.restarts).toBe(2);
    expect(again.exhausted).toBe(false);
  });

  it('many nodes failing in one episode count one restart', () => {
    let s = state({ members: [node('a'), node('b'), node('c')] }, { maxRestarts: 5 });
    s = { ...s, pendingFailure: mergeCause(s.pendingFailure, workerFailure('a', 0)) };
    s = { ...s, pendingFailure: mergeCause(s.pendingFailure, workerFailure('b', 2)) };
    s = { ...s, pendingFailure: mergeCause(s.pendingFailure, nodeLost(s, 'c', 'gone')) };
    const r = settleFailure(s);
    expect(r.state.restarts).toBe(1);
    expect(r.state.lastFailure?.nodeId).toBe('c');
  });

  it('is exhausted exactly when restarts exceed maxRestarts', () => {
    for (let max = 0; max <= 3; max++) {
      let s = state({}, { maxRestarts: max });
      for (let episode = 1; episode <= max + 1; episode++) {
        const r = settleFailure({ ...s, pendingFailure: workerFailure('a', 0, episode) });
        expect([max, episode, r.exhausted]).toEqual([max, episode, episode > max]);
        expect(r.state.restarts).toBe(episode);
        s = r.state;
      }
    }
  });

  it('maxRestarts 0 (torchrun default): the first failure fails the job', () => {
    const r = settleFailure(state({ pendingFailure: workerFailure('a', 0) }, { maxRestarts: 0 }));
    expect(r.exhausted).toBe(true);
  });
});

describe('describeFailure', () => {
  it('names rank, node and exit code, and the error-file message', () => {
    expect(describeFailure({ nodeId: 'n1', rank: 3, exitCode: 2, signal: null, message: 'ZeroDivisionError', round: 1 })).toBe(
      'rank 3 on node n1: exit code 2: ZeroDivisionError',
    );
  });

  it('prefers the signal over the exit code', () => {
    expect(describeFailure({ nodeId: 'n1', rank: 0, exitCode: -9, signal: 'SIGKILL', message: null, round: 1 })).toBe(
      'rank 0 on node n1: killed by SIGKILL',
    );
  });

  it('describes a lost node without rank or exit code', () => {
    const s = state({ round: 2 });
    expect(describeFailure(nodeLost(s, 'n2', 'no heartbeat within 10s'))).toBe('node n2: node lost: no heartbeat within 10s');
  });

  it('keeps exit code 0 and omits a missing message', () => {
    expect(describeFailure({ nodeId: 'n', rank: 1, exitCode: 0, signal: null, message: null, round: 1 })).toBe(
      'rank 1 on node n: exit code 0',
    );
  });
});

describe('joinTimeoutReason', () => {
  it('says how many nodes joined, the minimum and the join timeout in seconds', () => {
    const s = state({ waiting: [node('a')] }, { minNodes: 3, rdzv: { joinTimeoutMs: 90_000 } });
    expect(joinTimeoutReason(s)).toBe('rendezvous timed out: 1 of min 3 nodes joined within join_timeout 90s');
  });

  it('counts members and waiting nodes', () => {
    const s = state({ members: [node('a')], waiting: [node('b')] }, { minNodes: 4 });
    expect(joinTimeoutReason(s)).toBe('rendezvous timed out: 2 of min 4 nodes joined within join_timeout 600s');
  });
});

describe('shouldContinueAsNew', () => {
  const { shouldContinueAsNew } = jest.requireActual('../../src/job/decide') as typeof import('../../src/job/decide');
  const base = (every?: number, round = 5) => ({ round, spec: { continueAsNewEveryRounds: every } }) as unknown as import('../../src/job/state').JobState;
  test('when Temporal suggests it', () => {
    expect(shouldContinueAsNew(base(undefined), 5, true)).toBe(true);
    expect(shouldContinueAsNew(base(undefined), 0, false)).toBe(false);
  });
  test('every N rounds of this run', () => {
    expect(shouldContinueAsNew(base(2, 5), 4, false)).toBe(false);
    expect(shouldContinueAsNew(base(2, 6), 4, false)).toBe(true);
    expect(shouldContinueAsNew(base(1, 5), 4, false)).toBe(true);
  });

  it('continues after SIGNALS_PER_RUN signals in the run, before Temporal would refuse more', () => {
    const { SIGNALS_PER_RUN } = jest.requireActual('../../src/job/decide') as typeof import('../../src/job/decide');
    expect(shouldContinueAsNew(base(undefined), 0, false, SIGNALS_PER_RUN - 1)).toBe(false);
    expect(shouldContinueAsNew(base(undefined), 0, false, SIGNALS_PER_RUN)).toBe(true);
  });
});


describe('shouldContinueAsNewGathering', () => {
  const { shouldContinueAsNewGathering, SIGNALS_PER_RUN } = jest.requireActual('../../src/job/decide') as typeof import('../../src/job/decide');
  test('when Temporal suggests it, or once the run has taken SIGNALS_PER_RUN signals, whatever the round', () => {
    expect(shouldContinueAsNewGathering(true, 1)).toBe(true);
    expect(shouldContinueAsNewGathering(false, SIGNALS_PER_RUN - 1)).toBe(false);
    expect(shouldContinueAsNewGathering(false, SIGNALS_PER_RUN)).toBe(true);
  });
  test('not a run that has taken no signal: a state Temporal finds too long at once would continue as new for ever', () => {
    expect(shouldContinueAsNewGathering(true, 0)).toBe(false);
  });
});
