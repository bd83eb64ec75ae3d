/** Which nodes the job nudges after a change of its state (src/job/fate.ts). */
import { applyDeparture, applyDrain, applyJoinOrReject, rejectJoin } from '../../src/job/decide';
import { fateOf, nodesToTell } from '../../src/job/fate';
import { join, node, state } from './fixtures';

const base = () => state({ members: [node('a'), node('b')], waiting: [node('c')], phase: 'running', round: 3 });

describe('nodesToTell', () => {
  it('a node dropped as lost, drained, or let leave is told; nothing else changed tells no one', () => {
    const s = base();
    expect(nodesToTell(s, s)).toEqual([]);
    expect(nodesToTell(s, applyDeparture(s, 'b', 'lost'))).toEqual(['b']);
    expect(nodesToTell(s, applyDeparture(s, 'c', 'drained'))).toEqual(['c']);
    expect(nodesToTell(s, applyDeparture(s, 'a', 'left'))).toEqual(['a']);
    // A drain of a member waits for the round boundary: nothing to tell until it is applied.
    expect(nodesToTell(s, applyDrain(s, 'a'))).toEqual([]);
    expect(nodesToTell(s, { ...s, round: 4, restarts: 1 })).toEqual([]);
  });

  it('only the new departure is told, not the ones already there', () => {
    const once = applyDeparture(base(), 'b', 'lost');
    const twice = applyDeparture(once, 'a', 'lost');
    expect(nodesToTell(once, twice)).toEqual(['a']);
  });

  it('a node dropped again after it rejoined is told again', () => {
    const lost = applyDeparture(base(), 'b', 'lost');
    const back = applyJoinOrReject(lost, join('b'), 10);
    expect(nodesToTell(lost, back)).toEqual([]);
    expect(nodesToTell(back, applyDeparture(back, 'b', 'lost'))).toEqual(['b']);
  });

  it('a refused join is told, each time it is refused again', () => {
    const s = base();
    const refused = applyJoinOrReject(s, join('x', { slots: 7 }), 5);
    expect(refused.rejected.map((r) => r.nodeId)).toEqual(['x']);
    expect(nodesToTell(s, refused)).toEqual(['x']);
    expect(nodesToTell(refused, rejectJoin(refused, 'x', 'still wrong'))).toEqual(['x']);
  });

  it('several at once are each told once', () => {
    const s = base();
    const next = applyDeparture(applyDeparture(rejectJoin(s, 'y', 'no'), 'a', 'lost'), 'c', 'drained');
    expect(nodesToTell(s, next).sort()).toEqual(['a', 'c', 'y']);
  });
});

describe('fateOf (what a nudge tells the node)', () => {
  it('a departure with its reason and round, a refusal with why, nothing for a node still in the job', () => {
    const s = base();
    expect(fateOf(applyDeparture(s, 'b', 'lost'), 'b')).toEqual({ node: 'lost', round: 3 });
    expect(fateOf(applyDeparture(s, 'c', 'drained'), 'c')).toEqual({ node: 'drained', round: 3 });
    expect(fateOf(rejectJoin(s, 'x', 'script y.py does not match'), 'x')).toEqual({ node: 'rejected', reason: 'script y.py does not match', round: 3 });
    expect(fateOf(s, 'a')).toBeNull();
    expect(fateOf(s, 'nobody')).toBeNull();
  });
});
