/** The watchdog's bookkeeping, pure: torch FileTimerServer's rules, for this group's pids only. */
import { applyRequest, dueAt, emptyBook, forgetPids, parseRequest, timerKey, watchdogMessage, type TimerBook, type TimerRequest } from '../../../src/agent/timer';

const W = new Set([100, 200]);
const req = (pid: number, scopeId: string, expirationTime: number, signal = 9): TimerRequest => ({ version: 1, pid, scopeId, expirationTime, signal });

/** Applies requests read at `at` (ms); every one must be accepted. */
function book(...reqs: [TimerRequest, number][]): TimerBook {
  let b = emptyBook;
  for (const [r, at] of reqs) {
    const a = applyRequest(b, r, at, W);
    expect(a.ignored).toBeNull();
    b = a.book;
  }
  return b;
}

describe('applyRequest', () => {
  it('acquires a timer per (pid, scope), renews it, and releases it with a negative time', () => {
    let b = book([req(100, 'step', 12), 10_000], [req(100, 'load', 20), 10_000], [req(200, 'step', 30), 10_000]);
    expect(b.size).toBe(3);
    expect(b.get(timerKey(100, 'step'))).toEqual({ pid: 100, scopeId: 'step', expiresAtMs: 12_000, signal: 9, afterMs: 2_000 });
    b = applyRequest(b, req(100, 'step', 15), 11_000, W).book; // renewed
    expect(b.get(timerKey(100, 'step'))).toMatchObject({ expiresAtMs: 15_000, afterMs: 4_000 });
    b = applyRequest(b, req(100, 'step', -1, 0), 12_000, W).book; // torch's release
    expect([...b.keys()].sort()).toEqual([timerKey(100, 'load'), timerKey(200, 'step')].sort());
    // Releasing what is not held changes nothing.
    expect(applyRequest(b, req(200, 'other', -1, 0), 12_000, W).book).toEqual(b);
  });

  it('ignores a pid that is not a running worker of the group, and leaves the book as it was', () => {
    const b = book([req(100, 'step', 12), 10_000]);
    const a = applyRequest(b, req(1, 'step', 11), 10_000, W);
    expect(a.ignored).toBe('pid 1 is not a running worker of this round');
    expect(a.book).toBe(b);
    expect(applyRequest(b, req(300, 'step', -1, 0), 10_000, W).ignored).toMatch(/pid 300/);
  });

  it('does not change the book it was given', () => {
    const b = book([req(100, 'step', 12), 10_000]);
    applyRequest(b, req(100, 'step', -1, 0), 10_000, W);
    expect(b.size).toBe(1);
  });
});

describe('dueAt', () => {
  it('nothing is due before the expiry; at it (<=, as torch) the worker is killed with its signal and all its timers go', () => {
    const b = book([req(100, 'step', 12, 9), 10_000], [req(100, 'later', 50, 15), 10_000], [req(200, 'step', 30), 10_000]);
    const early = dueAt(b, 11_999);
    expect(early.kill).toEqual([]);
    expect(early.book).toBe(b);
    const due = dueAt(b, 12_000);
    expect(due.kill).toEqual([{ pid: 100, scopes: ['step'], timer: { pid: 100, scopeId: 'step', expiresAtMs: 12_000, signal: 9, afterMs: 2_000 } }]);
    expect([...due.book.keys()]).toEqual([timerKey(200, 'step')]); // pid 100's unexpired timer went too
  });

  it('several expired timers of one pid: the earliest that carries a signal decides', () => {
    const b = book([req(100, 'quiet', 11, 0), 10_000], [req(100, 'term', 12, 15), 10_000], [req(100, 'kill', 13, 9), 10_000]);
    const due = dueAt(b, 20_000);
    expect(due.kill).toHaveLength(1);
    expect(due.kill[0]).toMatchObject({ pid: 100, scopes: ['quiet', 'term', 'kill'], timer: { scopeId: 'term', signal: 15 } });
    expect(due.book.size).toBe(0);
  });

  it('an expired timer without a signal kills nothing; it is reported once and dropped', () => {
    const b = book([req(100, 'quiet', 11, 0), 10_000], [req(200, 'neg', 11, -3), 10_000], [req(100, 'later', 30, 9), 10_000]);
    const due = dueAt(b, 12_000);
    expect(due.kill).toEqual([]);
    expect(due.unsignalled.map((t) => t.scopeId).sort()).toEqual(['neg', 'quiet']);
    expect([...due.book.keys()]).toEqual([timerKey(100, 'later')]);
    expect(dueAt(due.book, 12_000).unsignalled).toEqual([]);
  });

  it('two workers due at once are both killed, the earlier expiry first', () => {
    const b = book([req(200, 'a', 12), 10_000], [req(100, 'b', 11), 10_000]);
    expect(dueAt(b, 13_000).kill.map((k) => k.pid)).toEqual([100, 200]);
  });
});

test('forgetPids drops every timer of the pids that exited', () => {
  const b = book([req(100, 'a', 12), 10_000], [req(100, 'b', 12), 10_000], [req(200, 'a', 12), 10_000]);
  expect([...forgetPids(b, [100]).keys()]).toEqual([timerKey(200, 'a')]);
  expect(forgetPids(b, [])).toBe(b);
});

describe('parseRequest', () => {
  it("reads torch's FileTimerRequest.to_json", () => {
    const line = JSON.stringify({ version: 1, pid: 4242, scope_id: 'train.py#57', expiration_time: 1764675000.25, signal: 9 });
    expect(parseRequest(line)).toEqual({ ok: true, request: { version: 1, pid: 4242, scopeId: 'train.py#57', expirationTime: 1764675000.25, signal: 9 } });
    expect(parseRequest(JSON.stringify({ version: 1, pid: 4242, scope_id: 's', expiration_time: -1, signal: 0 }))).toMatchObject({ ok: true });
  });

  it.each([
    ['not json', 'not JSON'],
    ['[]', 'request: Expected object, received array'],
    [JSON.stringify({ version: 1, pid: 0, scope_id: 's', expiration_time: 1, signal: 9 }), 'pid: Number must be greater than 0'],
    [JSON.stringify({ version: 1, pid: -5, scope_id: 's', expiration_time: 1, signal: 9 }), 'pid: Number must be greater than 0'],
    [JSON.stringify({ version: 1, pid: 1.5, scope_id: 's', expiration_time: 1, signal: 9 }), 'pid: Expected integer, received float'],
    [JSON.stringify({ version: 1, pid: '7', scope_id: 's', expiration_time: 1, signal: 9 }), 'pid: Expected number, received string'],
    [JSON.stringify({ version: 1, pid: 7, scope_id: 3, expiration_time: 1, signal: 9 }), 'scope_id: Expected string, received number'],
    [JSON.stringify({ version: 1, pid: 7, scope_id: 's', signal: 9 }), 'expiration_time: Required'],
    [JSON.stringify({ version: 1, pid: 7, scope_id: 's', expiration_time: 1, signal: 99 }), 'signal: Number must be less than or equal to 64'],
    [JSON.stringify({ version: 1, pid: 7, scope_id: 's', expiration_time: 1, signal: 9, extra: true }), "request: Unrecognized key(s) in object: 'extra'"],
  ])('rejects %s', (line, reason) => {
    expect(parseRequest(line)).toEqual({ ok: false, reason });
  });
});

test('watchdogMessage: the scope and how long the timer ran, in whole or tenth seconds', () => {
  expect(watchdogMessage('step', 60_000.4)).toBe('watchdog timer "step" expired after 60 s');
  expect(watchdogMessage('step', 1_996)).toBe('watchdog timer "step" expired after 2 s');
  expect(watchdogMessage('load', 2_540)).toBe('watchdog timer "load" expired after 2.5 s');
  expect(watchdogMessage('x', -5)).toBe('watchdog timer "x" expired after 0 s');
});
