/** Quarantine: the verdict and the policy (pure), and how a job keeps a quarantined node out. */
import * as d from '../../src/job/decide';
import { jobSpecSchema } from '../../src/job/spec';
import { initialState, type JobState } from '../../src/job/state';
import { toStatus } from '../../src/job/status';
import { derive } from '../../src/ledger/derive';
import { DEFAULT_QUARANTINE, quarantinePolicy, quarantineVerdict } from '../../src/ledger/quarantine';

const H = 3_600_000;
const policy = { failures: 3, windowMs: H };
const f = (at: number, jobId = 'j1', message: string | null = 'boom') => ({ at, jobId, message });

describe('quarantineVerdict', () => {
  const now = 10 * H;
  test('N failures within the window quarantine; N-1 do not', () => {
    expect(quarantineVerdict([f(now - 3), f(now - 2)], policy, now, null)).toBeNull();
    expect(quarantineVerdict([f(now - 3), f(now - 2, 'j2'), f(now - 1, 'j2', 'exit 1')], policy, now, null)).toBe('3 failures in 1h00m (2 jobs); last: exit 1');
  });
  test('failures older than the window, or before the last release, do not count', () => {
    expect(quarantineVerdict([f(now - H - 1), f(now - 2), f(now - 1)], policy, now, null)).toBeNull();
    expect(quarantineVerdict([f(now - 30), f(now - 20), f(now - 10)], policy, now, now - 15)).toBeNull();
    expect(quarantineVerdict([f(now - 30), f(now - 20), f(now - 10)], policy, now, now - 31)).not.toBeNull();
  });
  test('failures: 0 turns quarantine off', () => {
    expect(quarantineVerdict([f(now - 3), f(now - 2), f(now - 1)], { failures: 0, windowMs: H }, now, null)).toBeNull();
  });
});

describe('quarantinePolicy', () => {
  test('defaults, and values from the environment', () => {
    expect(quarantinePolicy({})).toEqual(DEFAULT_QUARANTINE);
    expect(quarantinePolicy({ TELASTIC_QUARANTINE_AFTER: '2', TELASTIC_QUARANTINE_WINDOW: '1h30m' })).toEqual({ failures: 2, windowMs: 5_400_000 });
    expect(quarantinePolicy({ TELASTIC_QUARANTINE_AFTER: '0' }).failures).toBe(0);
  });
  test('a bad value is one line naming the variable', () => {
    expect(() => quarantinePolicy({ TELASTIC_QUARANTINE_AFTER: 'three' })).toThrow('TELASTIC_QUARANTINE_AFTER three: must be an integer >= 0');
    expect(() => quarantinePolicy({ TELASTIC_QUARANTINE_WINDOW: 'soon' })).toThrow('TELASTIC_QUARANTINE_WINDOW soon: expected a duration such as 90s, 30m, 24h or 7d');
  });
});

describe('a job keeps quarantined nodes out', () => {
  const spec = jobSpecSchema.parse({ jobId: 'j', minNodes: 1, maxNodes: 3, nprocPerNode: 2, entrypoint: { script: 't.py', args: [] } });
  const node = (nodeId: string, joinedAt = 0) => ({ nodeId, address: `${nodeId}.local`, slots: 2, joinedAt });
  const running = (...ids: string[]): JobState => ({ ...initialState(spec, 0), phase: 'running', round: 1, members: ids.map((id) => node(id)) });
  const out = [{ nodeId: 'b', reason: '3 failures in 1h00m (1 job); last: boom' }];

  test('a quarantined member interrupts the round; the next round forms without it, and it is parked, not a spare', () => {
    const s = d.applyQuarantine(running('a', 'b', 'c'), out);
    expect(d.interruptReason(s, ['a', 'b', 'c'])).toBe('quarantine of b');
    expect(d.available(s)).toBe(2);
    const plan = d.planRound(s);
    expect(plan.participants.map((n) => n.nodeId)).toEqual(['a', 'c']);
    expect(plan.spares).toEqual([]);
    expect(plan.parked.map((n) => n.nodeId)).toEqual(['b']);
    // A quarantined newcomer is not admitted either.
    const waiting = d.applyQuarantine({ ...running('a'), waiting: [node('b')] }, out);
    expect(d.interruptReason(waiting, ['a'])).toBeNull();
    expect(toStatus(waiting).nodes.find((n) => n.nodeId === 'b')?.state).toBe('quarantined');
    expect(toStatus(waiting).quarantined).toEqual(out);
    expect(d.joinTimeoutReason({ ...waiting, spec: { ...spec, minNodes: 2 } })).toMatch(/1 of min 2 nodes .* \(b quarantined\)$/);
  });

  test('released, the node is admitted like a newcomer; the same answer twice changes nothing', () => {
    const s = d.applyQuarantine({ ...running('a'), waiting: [node('b')] }, out);
    expect(d.applyQuarantine(s, [...out])).toBe(s);
    const released = d.applyQuarantine(s, []);
    expect(d.interruptReason(released, ['a'])).toBe('admitting b');
    expect(d.planRound(released).participants.map((n) => n.nodeId)).toEqual(['a', 'b']);
  });

  test('the ledger records the quarantine and the release of a node still in the job', () => {
    let s = running('a', 'b');
    let r = derive(null, s, '2026-01-01T00:00:00.000Z');
    s = d.applyQuarantine(s, out);
    r = derive(r.cursor, s, '2026-01-01T00:00:01.000Z');
    expect(r.records).toEqual([expect.objectContaining({ kind: 'nodeEvent', nodeId: 'b', event: 'quarantine', cause: out[0].reason })]);
    expect(derive(r.cursor, s, '2026-01-01T00:00:02.000Z').records).toEqual([]);
    const released = derive(r.cursor, d.applyQuarantine(s, []), '2026-01-01T00:00:03.000Z');
    expect(released.records).toEqual([expect.objectContaining({ kind: 'nodeEvent', nodeId: 'b', event: 'release' })]);
    // A node that left while quarantined drops out without a release.
    const gone = derive(r.cursor, d.applyQuarantine(d.applyDeparture(s, 'b', 'lost'), []), '2026-01-01T00:00:03.000Z');
    expect(gone.records.filter((x) => x.kind === 'nodeEvent' && x.event === 'release')).toEqual([]);
  });
});
