/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: the
 * holder renews every `retryPeriod`; another candidate takes the lease over once the holder has
 * not renewed for `leaseDurationSeconds`; a holder that could not renew within `renewDeadline`
 * stops acting before anyone can take over. Writes carry the lease's resourceVersion, so of two
 * candidates that read the same expired lease only one write succeeds. The decision is pure.
 */
export interface LeaseTiming {
  /** @default 15000 */
  leaseDurationMs: number;
  /** @default 10000 (less than the duration: the leader stops before a successor starts) */
  renewDeadlineMs: number;
  /** @default 2000 */
  retryPeriodMs: number;
}
export const DEFAULT_LEASE_TIMING: LeaseTiming = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** The lease's spec as read (null: there is no lease yet). */
export interface LeaseSpecView {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  renewTime?: string | Date | null;
  acquireTime?: string | Date | null;
  leaseTransitions?: number | null;
}

export type LeaseStep =
  | { do: 'create'; spec: LeaseSpecView }
  | { do: 'renew'; spec: LeaseSpecView }
  | { do: 'takeover'; spec: LeaseSpecView }
  | { do: 'follow'; holder: string };

/** A MicroTime as the API server parses it (RFC 3339 with exactly six fractional digits). */
export const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
const iso = microTime;
const time = (t: string | Date | null | undefined) => (t == null ? NaN : t instanceof Date ? t.getTime() : Date.parse(t));

export function leaseStep(lease: LeaseSpecView | null, me: string, now: number, t: LeaseTiming = DEFAULT_LEASE_TIMING): LeaseStep {
  const durationS = Math.ceil(t.leaseDurationMs / 1000);
  const mine = (acquired: number, transitions: number): LeaseSpecView => ({ holderIdentity: me, leaseDurationSeconds: durationS, acquireTime: iso(acquired), renewTime: iso(now), leaseTransitions: transitions });
  if (lease === null) return { do: 'create', spec: mine(now, 0) };
  const holder = lease.holderIdentity ?? '';
  const transitions = lease.leaseTransitions ?? 0;
  if (holder === me) return { do: 'renew', spec: mine(Number.isNaN(time(lease.acquireTime)) ? now : time(lease.acquireTime), transitions) };
  const renewed = time(lease.renewTime);
  const expired = holder === '' || Number.isNaN(renewed) || now > renewed + (lease.leaseDurationSeconds ?? durationS) * 1000;
  return expired ? { do: 'takeover', spec: mine(now, transitions + 1) } : { do: 'follow', holder };
}

/** The spec that gives the lease up (on shutdown), so a successor need not wait out the duration. */
export function releasedSpec(lease: LeaseSpecView, now: number): LeaseSpecView {
  return { ...lease, holderIdentity: '', leaseDurationSeconds: 1, renewTime: iso(now) };
}

/** Whether a holder whose last successful renew was at `lastRenew` may still act. */
export function stillLeader(lastRenew: number | null, now: number, t: LeaseTiming = DEFAULT_LEASE_TIMING): boolean {
  return lastRenew !== null && now - lastRenew < t.renewDeadlineMs;
}
