/** Leader election's decision: who writes the Lease, and when a holder must stop acting. */
import { DEFAULT_LEASE_TIMING, leaseStep, microTime, releasedSpec, stillLeader } from '../../src/operator/lease';

const T0 = Date.parse('2026-12-02T12:00:00Z');
const held = (holder: string, renewedAt: number, transitions = 0) => ({ holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: microTime(T0 - 60_000), renewTime: microTime(renewedAt), leaseTransitions: transitions });

describe('leaseStep', () => {
  it('creates a lease that does not exist, held by me', () => {
    expect(leaseStep(null, 'a', T0)).toEqual({ do: 'create', spec: { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '2026-12-02T12:00:00.000000Z', renewTime: '2026-12-02T12:00:00.000000Z', leaseTransitions: 0 } });
  });

  it('renews my own lease, keeping when I acquired it', () => {
    const s = leaseStep(held('a', T0 - 2000), 'a', T0);
    expect(s).toEqual({ do: 'renew', spec: expect.objectContaining({ holderIdentity: 'a', acquireTime: microTime(T0 - 60_000), renewTime: microTime(T0), leaseTransitions: 0 }) });
  });

  it('follows a holder that renewed within the lease duration', () => {
    expect(leaseStep(held('b', T0 - 15_000), 'a', T0)).toEqual({ do: 'follow', holder: 'b' });
  });

  it('takes over a lease not renewed for longer than its duration, counting the transition', () => {
    expect(leaseStep(held('b', T0 - 15_001, 4), 'a', T0)).toEqual({ do: 'takeover', spec: expect.objectContaining({ holderIdentity: 'a', acquireTime: microTime(T0), leaseTransitions: 5 }) });
  });

  it('takes over a released lease (no holder) at once', () => {
    const released = releasedSpec(held('b', T0 - 1000), T0 - 1000);
    expect(released.holderIdentity).toBe('');
    expect(leaseStep(released, 'a', T0).do).toBe('takeover');
  });

  it('reads the renew time as the API server returns it (a Date or a MicroTime string)', () => {
    expect(leaseStep({ ...held('b', 0), renewTime: new Date(T0 - 1000) }, 'a', T0).do).toBe('follow');
    expect(leaseStep({ holderIdentity: 'b' }, 'a', T0).do).toBe('takeover');
  });
});

describe('stillLeader', () => {
  it('acts only within the renew deadline of its last renew, which is shorter than the lease', () => {
    expect(DEFAULT_LEASE_TIMING.renewDeadlineMs).toBeLessThan(DEFAULT_LEASE_TIMING.leaseDurationMs);
    expect(stillLeader(T0, T0 + 9_999)).toBe(true);
    expect(stillLeader(T0, T0 + 10_000)).toBe(false);
    expect(stillLeader(null, T0)).toBe(false);
  });
});
