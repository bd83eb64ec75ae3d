/**
 * Ride out a Temporal server that is not up yet, restarting or overloaded: retry a call with
 * capped exponential backoff and jitter while its error is transient (see classify.ts), say once
 * on stderr that we are waiting and once that we are connected again, and give up after a
 * patience with one line (`TemporalUnavailableError`). torchrun's agents wait for their store in
 * the same way.
 *
 * Namespace warm-up versus a namespace that does not exist: a freshly started or overloaded
 * server answers NamespaceNotFound while its namespace cache is still loading (seen with 64
 * agents against one dev server: `GetNamespace operation failed … context deadline exceeded`).
 * So NamespaceNotFound is retried like any transient error for a grace window (10 s). After the
 * window the caller's `probeNamespace` (a describeNamespace, which reads the namespace store, not
 * the cache) decides: it answers → the namespace exists, keep waiting; it also says not found →
 * the namespace really does not exist, `NamespaceMissingError`; it fails transiently → keep
 * waiting. Without a probe, the window alone decides. A missing namespace is thus reported about
 * 10 s after the first try, in one line.
 */
import { backoffMs, classify, DEFAULT_BACKOFF, type Backoff } from './classify';
import { NamespaceMissingError, TemporalRefusedError, TemporalUnavailableError } from './errors';

export interface RetryOptions {
  /** The frontend `host:port`, for the messages. */
  address: string;
  /** Give up after failing this long without a break. `Infinity` waits for ever (a service). */
  patienceMs: number;
  /** How the user sets the patience, named in the give-up line, e.g. `--connect-timeout`. */
  patienceName?: string;
  /** A cheap call made before retrying `fn` after a failure, so that "connected" is said when the server is back. */
  ping?: () => Promise<unknown>;
  /** Resolves when the namespace exists; rejects as Temporal would when it does not. */
  probeNamespace?: () => Promise<unknown>;
  /** How long NamespaceNotFound counts as warm-up before `probeNamespace` is asked. @default 10_000 */
  namespaceGraceMs?: number;
  /** Stops the waiting (the last error is thrown). */
  signal?: AbortSignal;
  backoff?: Backoff;
  /** Where the two lines go. @default stderr */
  say?: (line: string) => void;
  /** Clock and dice, for tests. */
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** A failed attempt that had run this long was working: its failure begins a new outage. */
export const LONG_ATTEMPT_MS = 30_000;

/** Addresses we told the user we are waiting for (one line per outage, not one per call). */
const announced = new Set<string>();

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Call `fn` until it succeeds, a non-transient error occurs, or the patience runs out. `fn` is
 * told how much patience is left, to bound an attempt that would otherwise overrun it.
 *
 * An outage begins with the first failed attempt; an attempt that ran for longer than
 * `LONG_ATTEMPT_MS` before failing (a long poll such as a job's result) was working until then,
 * so its failure begins a new outage, with a new patience, a new backoff and a new line.
 */
export async function withRetry<T>(fn: (leftMs: number) => Promise<T>, o: RetryOptions): Promise<T> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? abortableSleep;
  const say = o.say ?? ((line: string) => process.stderr.write(`${line}\n`));
  const grace = o.namespaceGraceMs ?? 10_000;
  let since: number | undefined; // when the current outage began
  let namespaceSince: number | undefined;
  let attempt = 0;
  let waiting = false;
  let lastKind: 'transient' | 'namespace' = 'transient';
  const connected = () => {
    if (waiting && announced.delete(o.address)) say(`telastic: connected to Temporal at ${o.address} after ${seconds(now() - (since ?? now()))}`);
  };
  for (;;) {
    const attemptStart = now();
    try {
      // A long poll says nothing until it ends: a cheap call tells the user the server is back.
      if (waiting && o.ping && lastKind === 'transient') {
        await o.ping();
        connected();
      }
      const value = await fn(since === undefined ? o.patienceMs : o.patienceMs - (now() - since));
      connected();
      return value;
    } catch (err) {
      const v = classify(err);
      if (v.kind === 'fatal' || o.signal?.aborted) throw err;
      if (v.kind === 'refused') throw new TemporalRefusedError(o.address, `the server refused the call (${v.reason})`, { cause: err });
      lastKind = v.kind;
      const t = now();
      if (since === undefined || t - attemptStart > LONG_ATTEMPT_MS) {
        since = t - attemptStart > LONG_ATTEMPT_MS ? t : attemptStart;
        namespaceSince = undefined;
        attempt = 0;
        if (waiting) announced.delete(o.address); // that outage is over (the call worked since)
        waiting = false;
      }
      let reason = v.kind === 'transient' ? v.reason : `namespace ${v.namespace} not ready`;
      if (v.kind === 'namespace') {
        namespaceSince ??= t;
        if (t - namespaceSince >= grace) {
          if (!o.probeNamespace || (await namespaceIsMissing(o.probeNamespace))) throw new NamespaceMissingError(v.namespace, o.address);
          namespaceSince = t; // it exists: the server is still loading it
          reason = `namespace ${v.namespace} exists but is not served yet`;
        }
      }
      if (t - since >= o.patienceMs) {
        announced.delete(o.address);
        throw new TemporalUnavailableError(o.address, reason, t - since, o.patienceName, { cause: err });
      }
      if (!waiting) {
        waiting = true;
        if (!announced.has(o.address)) {
          announced.add(o.address);
          say(`telastic: waiting for Temporal at ${o.address} (${reason}) …`);
        }
      }
      const left = o.patienceMs - (t - since);
      await sleep(Math.max(0, Math.min(backoffMs(attempt++, o.backoff ?? DEFAULT_BACKOFF, o.random), left)), o.signal);
      if (o.signal?.aborted) throw err;
    }
  }
}

/** True when the probe also says the namespace is not there; false when it answers or is transient. */
async function namespaceIsMissing(probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await probe();
    return false;
  } catch (err) {
    const v = classify(err);
    return v.kind === 'namespace' || (v.kind === 'fatal' && /not found/i.test(String((err as Error).message)));
  }
}
