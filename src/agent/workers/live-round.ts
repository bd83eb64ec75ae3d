/**
 * A round's worker group as the node activities hold it, with who owns it. A job that moves to
 * a newer build mid-round (docs/upgrading.md) continues as new and schedules `runWorkers` for the
 * same round again; that activity adopts the live group instead of starting new processes. The
 * old run's activity learns that its run closed (its heartbeat finds no run: NOT_FOUND) and lets
 * go without stopping the workers; a group nobody adopts within the window is stopped, as a
 * closed run's workers always were.
 */
import type { WorkerGroup } from './types';

export interface LiveRound {
  readonly jobId: string;
  readonly round: number;
  readonly group: WorkerGroup;
  /** Every worker has ended (the group is kept for a run that adopts it to read the result). */
  readonly ended: boolean;
  /** Take the group over (the first `runWorkers` of the round, or one adopting it); returns the owner token. */
  claim(): symbol;
  /** This token still owns the group: a newer activity has not adopted it. */
  owns(owner: symbol): boolean;
  /** Let go; unless another activity claims it within `windowMs`, `onExpire` runs. */
  release(owner: symbol, windowMs: number, onExpire: () => void): void;
}

export function liveRound(jobId: string, round: number, group: WorkerGroup): LiveRound {
  let owner: symbol | null = null;
  let expiry: NodeJS.Timeout | null = null;
  let ended = false;
  void group.wait().then(() => (ended = true));
  return {
    jobId,
    round,
    group,
    get ended() {
      return ended;
    },
    claim() {
      if (expiry) clearTimeout(expiry);
      expiry = null;
      owner = Symbol(`round ${round}`);
      return owner;
    },
    owns: (o) => owner === o,
    release(o, windowMs, onExpire) {
      if (owner !== o) return;
      owner = null;
      expiry = setTimeout(() => {
        expiry = null;
        if (owner === null) onExpire();
      }, windowMs);
      expiry.unref();
    },
  };
}
