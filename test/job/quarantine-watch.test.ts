/** When a job asks the ledger about quarantine (src/job/quarantine-watch.ts). */
import { RECHECK_MS, ask, checkDue, failureRecorded, recheckIn, startWatch } from '../../src/job/quarantine-watch';
import { node, state } from './fixtures';

describe('the quarantine watch', () => {
  const s = state({ members: [node('a', 2, 1)], waiting: [node('b', 2, 2)] });

  it('asks about nodes it has not asked about, and then not again until something changes', () => {
    const w0 = startWatch(0);
    expect(checkDue(w0, s, 0)).toBe(true);
    const { watch, nodeIds } = ask(w0, s, 10);
    expect(nodeIds).toEqual(['a', 'b']);
    expect(checkDue(watch, s, 10 + RECHECK_MS * 10)).toBe(false); // nobody is kept out: no rechecks
    // b joins again (its agent restarted): a new join time is a node to ask about.
    expect(checkDue(watch, { ...s, waiting: [node('b', 2, 99)] }, 11)).toBe(true);
  });

  it('asks after a failure was written, since the count includes it', () => {
    const { watch } = ask(startWatch(0), s, 0);
    expect(checkDue(failureRecorded(watch), s, 1)).toBe(true);
    expect(checkDue(ask(failureRecorded(watch), s, 1).watch, s, 2)).toBe(false);
  });

  it('while a node is kept out, asks again every RECHECK_MS to learn of its release', () => {
    const out = { ...s, quarantined: [{ nodeId: 'b', reason: '2 failures in 1h' }] };
    const { watch } = ask(startWatch(0), out, 100);
    expect(recheckIn(watch, out, 100)).toBe(RECHECK_MS);
    expect(recheckIn(watch, s, 100)).toBeNull();
    expect(checkDue(watch, out, 100 + RECHECK_MS - 1)).toBe(false);
    expect(checkDue(watch, out, 100 + RECHECK_MS)).toBe(true);
  });
});
