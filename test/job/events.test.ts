/** The job's reducer (src/job/events.ts): every change to a job's state is an event applied here. */
import { reduce, type JobEvent } from '../../src/job/events';
import type { JobState } from '../../src/job/state';
import { ids, join, node, state, workerFailure } from './fixtures';

const apply = (s: JobState, ...events: JobEvent[]) => events.reduce(reduce, s);

describe('messages meet the round at any step', () => {
  // What a handler applies while the round awaits an activity, and the step the round applies
  // when the activity returns: in either order, both take effect.
  const messages: [string, JobEvent, (s: JobState) => boolean][] = [
    ['a drain', { type: 'drain', req: { nodeId: 'b' }, now: 5 }, (s) => s.drains.includes('b')],
    ['a scale', { type: 'scale', req: { maxNodes: 1 } }, (s) => s.spec.maxNodes === 1],
    ['a join', { type: 'lobby', events: [{ kind: 'join', req: join('c') }], now: 5 }, (s) => ids(s.waiting).includes('c')],
    ['a checkpoint-first drain', { type: 'drain', req: { nodeId: 'b', checkpointFirst: true, graceMs: 1000 }, now: 5 }, (s) => s.preempts.some((p) => p.nodeId === 'b')],
    ['a grant', { type: 'granted', nodes: [{ nodeId: 'c', address: 'c.local', slots: 2 }], now: 5 }, (s) => s.poolNodes.includes('c')],
  ];
  const steps: JobEvent[] = [
    { type: 'checkpointFound', checkpoint: { path: '/ck/ckpt_7.pt', step: 7, time: '2026-12-01T00:00:00.000Z' } },
    { type: 'running' },
    { type: 'groupFinished', round: 1, nodeIds: ['a'] },
    { type: 'ledgerNoted', cursor: { seq: 1, round: 1, open: true, members: [], failures: [], departures: [], checkpoint: null, ended: false, quarantined: [] }, records: [] },
    { type: 'quarantine', quarantined: [] },
  ];
  const round1 = () => state({ round: 1, phase: 'rendezvous', members: [node('a'), node('b')], ledger: { cursor: null, outbox: [] } });
  for (const [what, message, took] of messages) {
    for (const step of steps) {
      it(`${what} before a ${step.type} survives it`, () => {
        expect(took(apply(round1(), message, step))).toBe(true);
      });
    }
  }
});

describe('prepared', () => {
  it('every participant answered: they are the members in the planned order, the rest wait', () => {
    const s = apply(state({ members: [node('a')], waiting: [node('b'), node('c')] }), { type: 'prepared', participants: ['a', 'c'], unanswered: [] });
    expect(ids(s.members)).toEqual(['a', 'c']);
    expect(ids(s.waiting)).toEqual(['b']);
  });

  it('a participant drained while prepare ran is not made a member', () => {
    const s0 = state({ waiting: [node('a'), node('b')] });
    const s = apply(s0, { type: 'drain', req: { nodeId: 'b' }, now: 1 }, { type: 'prepared', participants: ['a', 'b'], unanswered: [] });
    expect(ids(s.members)).toEqual(['a']);
    expect(s.departed.map((d) => [d.nodeId, d.reason])).toEqual([['b', 'drained']]);
  });

  it('an unanswered member is lost and blamed; an unanswered newcomer is only dropped', () => {
    const s = apply(state({ round: 2, members: [node('a'), node('b')], waiting: [node('c')] }), {
      type: 'prepared',
      participants: ['a', 'b', 'c'],
      unanswered: [
        { nodeId: 'c', why: 'did not answer within 5s' },
        { nodeId: 'b', why: 'did not answer within 5s' },
      ],
    });
    expect(ids(s.members)).toEqual(['a']);
    expect(s.departed.map((d) => [d.nodeId, d.reason])).toEqual([['c', 'lost'], ['b', 'lost']]);
    expect(s.pendingFailure).toMatchObject({ nodeId: 'b', rank: null, message: 'node lost: did not answer within 5s', round: 2 });
  });
});

describe('roundEnded', () => {
  it('blames the lost node over the survivor whose collective it broke, and restarts', () => {
    const s = apply(state({ round: 1, phase: 'running', members: [node('a'), node('b')], finished: ['a'] }), {
      type: 'roundEnded',
      outcomes: [
        { nodeId: 'a', kind: 'failed', failure: workerFailure('a', 0) },
        { nodeId: 'b', kind: 'lost', why: 'no heartbeat within 10s' },
      ],
    });
    expect(s.phase).toBe('restarting');
    expect(s.finished).toEqual([]);
    expect(ids(s.members)).toEqual(['a']);
    expect(s.pendingFailure).toMatchObject({ nodeId: 'b', rank: null });
    const settled = apply(s, { type: 'failureSettled' });
    expect([settled.restarts, settled.lastFailure?.nodeId, settled.pendingFailure]).toEqual([1, 'b', null]);
  });

  it('stopped nodes (a membership change) blame no one', () => {
    const s = apply(state({ round: 1, phase: 'running', members: [node('a')] }), { type: 'roundEnded', outcomes: [{ nodeId: 'a', kind: 'stopped' }] });
    expect([s.phase, s.pendingFailure, ids(s.members)]).toEqual(['restarting', null, ['a']]);
  });
});

describe('messages that do not parse change nothing', () => {
  const s0 = state({ members: [node('a')] });
  it.each<[string, JobEvent]>([
    ['a drain without a node id', { type: 'drain', req: { node: 'a' }, now: 1 }],
    ['a scale of nothing', { type: 'scale', req: {} }],
    ['a scale with min over max', { type: 'scale', req: { minNodes: 9 } }],
    ['a lobby leave without a node id', { type: 'lobby', events: [{ kind: 'leave', req: {} as never }], now: 1 }],
  ])('%s', (_, e) => {
    expect(reduce(s0, e)).toEqual(s0);
  });

  it('a join that does not parse is refused with the field named, for its agent', () => {
    const s = reduce(s0, { type: 'lobby', events: [{ kind: 'join', req: { ...join('x'), slots: 0 } }], now: 1 });
    expect(s.rejected).toEqual([{ nodeId: 'x', reason: expect.stringMatching(/^join: slots: /) }]);
    expect(ids(s.waiting)).toEqual([]);
  });
});

describe('side loops', () => {
  it('the ledger drops only what was sent', () => {
    const rec = (seq: number) => ({ seq, jobId: 'job1', at: 't', kind: 'node' }) as never;
    const s = apply(state({ ledger: { cursor: null, outbox: [rec(1), rec(2), rec(3)] } }), { type: 'ledgerSent', lastSeq: 2 });
    expect(s.ledger?.outbox.map((r) => r.seq)).toEqual([3]);
  });

  it('no ledger: its events change nothing until it is opened', () => {
    const s0 = state();
    expect(reduce(s0, { type: 'ledgerSent', lastSeq: 2 })).toBe(s0);
    expect(reduce(s0, { type: 'ledgerOpened' }).ledger).toEqual({ cursor: null, outbox: [] });
  });

  it('a node given back to the pool while granted again stays held', () => {
    const s0 = state({ poolNodes: ['a', 'b'], waiting: [node('b')] }, { pool: 'p' });
    expect(reduce(s0, { type: 'poolTold', released: ['a', 'b'] }).poolNodes).toEqual(['b']);
  });

  it('a checkpoint-first drain ends once: the node drains, and a second end changes nothing', () => {
    const s0 = apply(state({ round: 1, phase: 'running', members: [node('a'), node('b')] }, { checkpointDir: '/ck' }), {
      type: 'drain', req: { nodeId: 'b', checkpointFirst: true, graceMs: 1000 }, now: 10,
    });
    const p = s0.preempts[0];
    const end: JobEvent = { type: 'preemptEnded', preempt: p, checkpoint: null, now: 20, note: 'grace ran out' };
    const s1 = reduce(s0, end);
    expect([s1.preempts, s1.drains, s1.preemptions.length]).toEqual([[], ['b'], 1]);
    expect(reduce(s1, end)).toBe(s1);
  });

  it('a pool job keeps no spares at a boundary; a job of `telastic run` keeps them', () => {
    const over = { members: [node('a')], waiting: [node('b')] };
    expect(ids(reduce(state(over, { maxNodes: 1, pool: 'p' }), { type: 'boundary' }).waiting)).toEqual([]);
    expect(ids(reduce(state(over, { maxNodes: 1 }), { type: 'boundary' }).waiting)).toEqual(['b']);
  });
});

describe('phases', () => {
  it('waiting keeps the time it first fell below min; gathering clears it', () => {
    const s = apply(state({ belowMinSince: null }), { type: 'waiting', now: 5 }, { type: 'waiting', now: 9 });
    expect([s.phase, s.belowMinSince]).toEqual(['waiting', 5]);
    expect(reduce(s, { type: 'gathered' })).toMatchObject({ phase: 'rendezvous', belowMinSince: null });
  });

  it('a round opens with the next number; a grant to an ended job is ignored', () => {
    expect(reduce(state({ round: 3 }), { type: 'roundOpened' })).toMatchObject({ round: 4, phase: 'rendezvous' });
    const ended = reduce(state(), { type: 'ended', phase: 'succeeded' });
    expect(reduce(ended, { type: 'granted', nodes: [{ nodeId: 'c', address: 'c', slots: 1 }], now: 1 })).toBe(ended);
  });
});
