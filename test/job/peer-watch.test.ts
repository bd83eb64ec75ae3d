/** Peer watch decisions (src/job/peer-watch.ts): the ring, what a close means, whom it blames. */
import * as d from '../../src/job/decide';
import { reduce } from '../../src/job/events';
import { isPeerWatchLoss, peerGone, peerLostMessage, peerLostOutcomes, watchTargets } from '../../src/job/peer-watch';
import type { NodeOutcome } from '../../src/job/state';
import { ids, node, state, workerFailure } from './fixtures';

describe('watchTargets: a ring by group rank', () => {
  const ns = ['a', 'b', 'c', 'd'].map((n) => node(n));
  const ports = { a: 1001, b: 1002, c: 1003, d: 1004 };

  test('each node watches the next; the last watches group rank 0', () => {
    expect(watchTargets(ns, ports)).toEqual([
      { nodeId: 'b', addr: 'b.local', port: 1002 },
      { nodeId: 'c', addr: 'c.local', port: 1003 },
      { nodeId: 'd', addr: 'd.local', port: 1004 },
      { nodeId: 'a', addr: 'a.local', port: 1001 },
    ]);
  });

  test('every node is watched exactly once, and each watches one (O(1) per node)', () => {
    for (let n = 2; n <= 9; n++) {
      const members = Array.from({ length: n }, (_, i) => node(`n${i}`));
      const t = watchTargets(members, Object.fromEntries(members.map((m, i) => [m.nodeId, 2000 + i])));
      const watched = t.map((x) => x!.nodeId).sort();
      expect(watched).toEqual(ids(members).sort());
      t.forEach((x, i) => expect(x!.nodeId).not.toBe(members[i].nodeId));
    }
  });

  test('a ring of one has no peer', () => {
    expect(watchTargets([node('a')], { a: 1 })).toEqual([undefined]);
  });

  test('two nodes watch each other', () => {
    expect(watchTargets(ns.slice(0, 2), ports).map((t) => t?.nodeId)).toEqual(['b', 'a']);
  });

  test('a successor without a watch port (an older agent) is watched by heartbeats only', () => {
    expect(watchTargets(ns.slice(0, 3), { a: 1, c: 3 }).map((t) => t?.nodeId)).toEqual([undefined, 'c', 'a']);
  });
});

describe('peerGone: which closes blame the peer', () => {
  // Every combination: only an answered connection, closed unannounced and not by us, blames.
  const cases: [boolean, boolean, boolean, string | null, boolean][] = [];
  for (const armed of [false, true])
    for (const bye of [false, true])
      for (const closedByUs of [false, true])
        for (const error of [null, 'ECONNRESET', 'ECONNREFUSED']) cases.push([armed, bye, closedByUs, error, armed && !bye && !closedByUs]);
  test.each(cases)('armed %s, bye %s, closed by us %s, error %s → gone %s', (armed, bye, closedByUs, error, gone) => {
    expect(peerGone({ armed, bye, closedByUs, error })).toBe(gone);
  });

  test('the cases that blame: a plain EOF or a reset of an answered connection', () => {
    expect(peerGone({ armed: true, bye: false, closedByUs: false, error: null })).toBe(true);
    expect(peerGone({ armed: true, bye: false, closedByUs: false, error: 'ECONNRESET' })).toBe(true);
    expect(peerGone({ armed: false, bye: false, closedByUs: false, error: 'ECONNREFUSED' })).toBe(false);
  });
});

describe('a peer watch report, as the job applies it', () => {
  const message = peerLostMessage('b', 'a', 'ECONNRESET');
  const running = () => state({ round: 1, phase: 'running', members: ['a', 'b', 'c'].map((n) => node(n)), restarts: 0 });

  test('the message names the peer and the watcher', () => {
    expect(message).toBe("peer watch: peer b's agent connection closed (ECONNRESET), seen by a");
    expect(peerLostMessage('b', 'a', null)).toBe("peer watch: peer b's agent connection closed, seen by a");
  });

  test('the peer is lost, the watcher only stopped', () => {
    expect(peerLostOutcomes('a', 'b', message, () => false)).toEqual([
      { nodeId: 'a', kind: 'stopped' },
      { nodeId: 'b', kind: 'lost', why: message },
    ]);
  });

  test('a peer with an outcome of its own keeps it', () => {
    expect(peerLostOutcomes('a', 'b', message, (id) => id === 'b')).toEqual([{ nodeId: 'a', kind: 'stopped' }]);
  });

  test('the peer is dropped and blamed, one restart, as a node lost by heartbeat timeout', () => {
    const byWatch = reduce(running(), { type: 'roundEnded', outcomes: peerLostOutcomes('a', 'b', message, () => false) });
    const byHeartbeat = reduce(running(), { type: 'roundEnded', outcomes: [{ nodeId: 'a', kind: 'stopped' }, { nodeId: 'b', kind: 'lost', why: 'no heartbeat within 10s' }] });
    for (const s of [byWatch, byHeartbeat]) {
      expect(ids(s.members)).toEqual(['a', 'c']);
      expect(s.departed).toEqual([{ nodeId: 'b', reason: 'lost', round: 1 }]);
      expect(s.pendingFailure).toMatchObject({ nodeId: 'b', rank: null });
      // Not offered `prepare` in the next round: the survivors re-form without waiting for it.
      expect(ids(d.planRound(s).participants)).toEqual(['a', 'c']);
      const settled = d.settleFailure(s);
      expect(settled.state.restarts).toBe(1);
      expect(settled.state.lastFailure?.nodeId).toBe('b');
    }
    expect(byWatch.pendingFailure?.message).toBe(`node lost: ${message}`);
    expect(isPeerWatchLoss(byWatch.pendingFailure)).toBe(true);
    expect(isPeerWatchLoss(byHeartbeat.pendingFailure)).toBe(false);
  });

  test('blame the cause: a worker failure the loss provoked does not outrank it', () => {
    const outcomes: NodeOutcome[] = [{ nodeId: 'c', kind: 'failed', failure: workerFailure('c', 4) }, ...peerLostOutcomes('a', 'b', message, () => false)];
    expect(reduce(running(), { type: 'roundEnded', outcomes }).pendingFailure?.nodeId).toBe('b');
  });

  test('a wrongly dropped node rejoins as a newcomer at the next boundary, at no restart', () => {
    const dropped = d.settleFailure(reduce(running(), { type: 'roundEnded', outcomes: peerLostOutcomes('a', 'b', message, () => false) })).state;
    const back = d.applyJoin(dropped, { nodeId: 'b', address: 'b.local', slots: 2, entrypoint: { script: 'train.py', args: ['--epochs', '3'], module: false, noPython: false }, role: 'default' }, 5);
    expect(ids(d.planRound(back).participants)).toEqual(['a', 'c', 'b']);
    expect(back.restarts).toBe(1);
    expect(back.pendingFailure).toBeNull();
  });
});

describe('assignRanks with watch targets', () => {
  test('each assignment carries its own target; none without', () => {
    const ms = ['a', 'b'].map((n) => node(n));
    const s = state({ round: 2, members: ms });
    const watch = watchTargets(ms, { a: 7001, b: 7002 });
    const as = d.assignRanks(s, ms, { addr: 'a.local', port: 29500 }, { watch });
    expect(as.map((a) => a.watch)).toEqual(watch);
    expect(d.assignRanks(s, ms, { addr: 'a.local', port: 29500 }).every((a) => !('watch' in a))).toBe(true);
  });
});
