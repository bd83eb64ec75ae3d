/** Joins that arrive through a lobby (signals): applied when valid, refused with a reason otherwise. */
import { applyJoinOrReject } from '../../src/job/decide';
import { nodeView } from '../../src/job/status';
import { ids, join, state } from './fixtures';

describe('applyJoinOrReject', () => {
  it('a matching join is applied like the join update', () => {
    const s = applyJoinOrReject(state(), join('a'), 5);
    expect(ids(s.waiting)).toEqual(['a']);
    expect(s.rejected ?? []).toEqual([]);
    expect(nodeView(s, 'a')).toEqual({ job: 'waiting', node: 'waiting' });
  });

  it('a mismatched join changes no membership and records one line naming the field', () => {
    const s = applyJoinOrReject(state(), join('a', { slots: 3 }), 5);
    expect(s.waiting).toEqual([]);
    expect(s.rejected).toEqual([{ nodeId: 'a', reason: 'nproc-per-node 3 does not match job job1 (2)' }]);
    expect(nodeView(s, 'a')).toEqual({ job: 'waiting', node: 'rejected', reason: 'nproc-per-node 3 does not match job job1 (2)' });
  });

  it('a later matching join clears the refusal; a repeated refusal is kept once', () => {
    let s = applyJoinOrReject(state(), join('a', { role: 'x' }), 1);
    s = applyJoinOrReject(s, join('a', { role: 'y' }), 2);
    expect(s.rejected).toHaveLength(1);
    s = applyJoinOrReject(s, join('a'), 3);
    expect(s.rejected).toEqual([]);
    expect(ids(s.waiting)).toEqual(['a']);
  });

  it('refusals are bounded', () => {
    let s = state();
    for (let i = 0; i < 80; i++) s = applyJoinOrReject(s, join(`n${i}`, { slots: 9 }), i);
    expect(s.rejected!.length).toBeLessThanOrEqual(50);
    expect(s.rejected!.at(-1)!.nodeId).toBe('n79');
  });

  it('a node the job has not heard of is pending', () => {
    expect(nodeView(state(), 'ghost')).toEqual({ job: 'waiting', node: 'pending' });
  });
});
