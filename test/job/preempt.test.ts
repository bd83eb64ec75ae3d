/** Checkpoint-first drains as pure decisions (src/job/preempt.ts). */
import { finishPreempt, preemptOverReason, requestCheckpointFirst, describePreemption } from '../../src/job/preempt';
import { toStatus } from '../../src/job/status';
import { node, state } from './fixtures';

const running = () => state({ phase: 'running', round: 3, members: [node('a'), node('b')], waiting: [node('c')] }, { checkpointDir: '/ckpt' });
const ck = (step: number | null, time: string, path = `/ckpt/ckpt_${step}.pt`) => ({ path, step, time });
const T0 = Date.parse('2026-12-01T12:00:01Z');

describe('requestCheckpointFirst', () => {
  test('a member waits in preempts (not yet a drain), shown as checkpointing', () => {
    const s = requestCheckpointFirst(running(), 'b', 25_000, T0);
    expect(s.preempts).toEqual([{ nodeId: 'b', requestedAt: T0, graceMs: 25_000 }]);
    expect(s.drains).toEqual([]);
    expect(toStatus(s).nodes.find((n) => n.nodeId === 'b')?.state).toBe('checkpointing');
    expect(toStatus(s).preempting).toEqual([{ nodeId: 'b', requestedAt: '2026-12-01T12:00:01.000Z', graceMs: 25_000 }]);
  });
  test('asking twice, or for a node already draining, changes nothing', () => {
    const once = requestCheckpointFirst(running(), 'b', 25_000, T0);
    expect(requestCheckpointFirst(once, 'b', 1_000, T0 + 5)).toBe(once);
    const drained = { ...running(), drains: ['b'] };
    expect(requestCheckpointFirst(drained, 'b', 1_000, T0)).toBe(drained);
  });
  test('a node outside the round has no workers to ask: it leaves at once', () => {
    const s = requestCheckpointFirst(running(), 'c', 25_000, T0);
    expect(s.preempts ?? []).toEqual([]);
    expect(s.departed).toEqual([{ nodeId: 'c', reason: 'drained', round: 3 }]);
  });
  test('an unknown node changes nothing', () => {
    const s = running();
    expect(requestCheckpointFirst(s, 'zz', 1, T0)).toBe(s);
  });
});

describe('preemptOverReason', () => {
  const p = { nodeId: 'b', requestedAt: T0, graceMs: 25_000 };
  test('keeps waiting while the round runs with the node', () => {
    expect(preemptOverReason(running(), p, 3)).toBeNull();
  });
  test('a plain drain, the node gone, or the round over ends the wait', () => {
    expect(preemptOverReason({ ...running(), drains: ['b'] }, p, 3)).toMatch(/drained at once/);
    expect(preemptOverReason({ ...running(), members: [node('a')] }, p, 3)).toMatch(/left the job/);
    expect(preemptOverReason({ ...running(), phase: 'restarting' }, p, 3)).toMatch(/round 3 ended/);
    expect(preemptOverReason({ ...running(), round: 4 }, p, 3)).toMatch(/round 3 ended/);
  });
});

describe('finishPreempt', () => {
  const asked = requestCheckpointFirst(running(), 'b', 25_000, T0);
  const p = asked.preempts![0];
  test('with a checkpoint: recorded with the time it took, and the node drains', () => {
    const s = finishPreempt(asked, p, { checkpoint: ck(123, '2026-12-01T12:00:03Z', '/ckpt/ckpt_00000123.pt'), now: T0 + 2300 });
    expect(s.preempts).toEqual([]);
    expect(s.drains).toEqual(['b']);
    expect(s.preemptions).toEqual([{ nodeId: 'b', requestedAt: '2026-12-01T12:00:01.000Z', graceMs: 25_000, round: 3, checkpoint: { path: '/ckpt/ckpt_00000123.pt', step: 123 }, tookMs: 2300 }]);
    expect(describePreemption(s.preemptions![0])).toBe('drain of b: checkpoint-first requested 12:00:01, checkpoint ckpt_00000123.pt (step 123) after 2.3 s');
    expect(toStatus(s).preemptions).toHaveLength(1);
  });
  test('without one: the grace ran out, said so', () => {
    const s = finishPreempt(asked, p, { checkpoint: null, now: T0 + 25_000 });
    expect(s.drains).toEqual(['b']);
    expect(describePreemption(s.preemptions![0])).toBe('drain of b: checkpoint-first requested 12:00:01, no checkpoint within the 25s grace');
    const why = finishPreempt(asked, p, { checkpoint: null, now: T0 + 1000, note: 'drained at once before a checkpoint came' });
    expect(describePreemption(why.preemptions![0])).toBe('drain of b: checkpoint-first requested 12:00:01, no checkpoint: drained at once before a checkpoint came (after 1.0 s)');
  });
  test('keeps the 20 newest outcomes', () => {
    let s = asked;
    for (let i = 0; i < 25; i++) s = finishPreempt({ ...s, drains: [] }, p, { checkpoint: null, now: T0 + i });
    expect(s.preemptions).toHaveLength(20);
    expect(s.preemptions!.at(-1)!.tookMs).toBe(24);
  });
});
