/**
 * Error classification and the retry loop, on the error shapes the SDK really throws: refused
 * connections are made for real (nothing listens on the port); the rest are built with the SDK's
 * own error classes and the messages seen from a dev server. The clock is fake.
 */
import { Connection, ServiceError, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure, NamespaceNotFoundError, RetryState } from '@temporalio/common';
import { NativeConnection, TransportError } from '@temporalio/worker';
import { JobInputError } from '../../src/client/api';
import { backoffMs, classify } from '../../src/temporal/classify';
import { NamespaceMissingError, TemporalUnavailableError } from '../../src/temporal/errors';
import { freePort } from '../../src/temporal/ports';
import { withRetry, type RetryOptions } from '../../src/temporal/retry';

/** A gRPC error as @grpc/grpc-js makes it. */
function grpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code, details: message.replace(/^\d+ \w+: /, ''), metadata: {} });
}

const transient = (reason: string) => ({ kind: 'transient', reason });

describe('classify', () => {
  test('a refused connection, from both connection kinds, is transient', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const client = await Connection.connect({ address, connectTimeout: 300 }).catch((e: unknown) => e);
    expect(classify(client)).toEqual(transient('not reachable'));
    const native = await NativeConnection.connect({ address }).catch((e: unknown) => e);
    expect(native).toBeInstanceOf(TransportError);
    expect(classify(native)).toEqual(transient('connection refused'));
  });

  test.each([
    [1, '1 CANCELLED: Call cancelled', 'CANCELLED'],
    [4, '4 DEADLINE_EXCEEDED: Deadline exceeded after 1.497s', 'DEADLINE_EXCEEDED'],
    [8, '8 RESOURCE_EXHAUSTED: namespace rate limit exceeded', 'RESOURCE_EXHAUSTED'],
    [14, '14 UNAVAILABLE: No connection established', 'UNAVAILABLE'],
    [2, '2 UNKNOWN: stream terminated by RST_STREAM with error code: CANCEL', 'stream reset'],
    [13, '13 INTERNAL: Received RST_STREAM with code 8', 'stream reset'],
  ])('gRPC code %i (%s) is transient, also wrapped in the client\'s ServiceError', (code, message, reason) => {
    expect(classify(grpcError(code, message))).toEqual(transient(reason));
    const wrapped = new ServiceError('Failed to start Workflow', { cause: grpcError(code, message) });
    expect(classify(wrapped)).toEqual(transient(reason));
  });

  test('an update that timed out or was cancelled waiting for a worker is transient', () => {
    const err = new WorkflowUpdateRPCTimeoutOrCancelledError('Deadline exceeded', { cause: grpcError(4, '4 DEADLINE_EXCEEDED: Deadline exceeded') });
    expect(classify(err)).toEqual(transient('DEADLINE_EXCEEDED'));
  });

  test('a missing namespace, in the client\'s, the worker\'s and describeNamespace\'s words', () => {
    expect(classify(new NamespaceNotFoundError('default'))).toEqual({ kind: 'namespace', namespace: 'default' });
    const core = new TransportError('Namespace nope was not found or otherwise could not be described: Status { code: NotFound, message: "Namespace nope is not found." }');
    expect(classify(core)).toEqual({ kind: 'namespace', namespace: 'nope' });
    expect(classify(grpcError(5, '5 NOT_FOUND: Namespace nope is not found.'))).toEqual({ kind: 'namespace', namespace: 'nope' });
  });

  test('a worker that could not describe its namespace because the server is busy is transient', () => {
    const core = new TransportError('Namespace default was not found or otherwise could not be described: Status { code: DeadlineExceeded, message: "context deadline exceeded" }');
    expect(classify(core)).toEqual(transient('DEADLINE_EXCEEDED'));
  });

  test('failed jobs, rejected inputs, unknown workflows and other gRPC codes are fatal', () => {
    const failed = new WorkflowFailedError('Workflow execution failed', ApplicationFailure.create({ message: 'rank 1: ConnectionRefusedError: connection refused' }), RetryState.NON_RETRYABLE_FAILURE);
    expect(classify(failed)).toEqual({ kind: 'fatal' });
    expect(classify(new JobInputError('nproc-per-node 2 does not match job j (1)', 'j'))).toEqual({ kind: 'fatal' });
    expect(classify(new WorkflowNotFoundError('workflow not found for ID: j', 'j', undefined))).toEqual({ kind: 'fatal' });
    expect(classify(grpcError(3, '3 INVALID_ARGUMENT: bad'))).toEqual({ kind: 'fatal' });
    expect(classify(grpcError(5, '5 NOT_FOUND: workflow execution not found'))).toEqual({ kind: 'fatal' });
    expect(classify(new TypeError('x is not a function'))).toEqual({ kind: 'fatal' });
    expect(classify(new TemporalUnavailableError('h:1', 'UNAVAILABLE', 60_000))).toEqual({ kind: 'fatal' });
  });
});

test('backoff doubles from 200 ms, is capped at 5 s, and is jittered within [half, full]', () => {
  const lo = [0, 1, 2, 3, 4, 5, 10, 40].map((a) => backoffMs(a, undefined, () => 0));
  const hi = [0, 1, 2, 3, 4, 5, 10, 40].map((a) => backoffMs(a, undefined, () => 1));
  expect(hi).toEqual([200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
  expect(lo).toEqual(hi.map((h) => h / 2));
});

/** A fake clock: sleeping moves it forward. */
function harness(over: Partial<RetryOptions> = {}) {
  let t = 1_000_000;
  const lines: string[] = [];
  const sleeps: number[] = [];
  const opts: RetryOptions = {
    address: `h:${Math.random()}`,
    patienceMs: 60_000,
    say: (l) => lines.push(l),
    now: () => t,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
      t += ms;
    },
    ...over,
  };
  return { opts, lines, sleeps, advance: (ms: number) => (t += ms), elapsed: () => t - 1_000_000 };
}

/** fn that throws `errs` in turn, then returns 'ok'. */
function failing(...errs: unknown[]) {
  let calls = 0;
  const fn = async () => {
    if (calls < errs.length) throw errs[calls++];
    calls++;
    return 'ok';
  };
  return { fn, calls: () => calls };
}

describe('withRetry', () => {
  test('waits out transient errors: one waiting line naming address and reason, one connected line, growing waits', async () => {
    const h = harness();
    const f = failing(grpcError(14, '14 UNAVAILABLE: x'), grpcError(14, '14 UNAVAILABLE: x'), grpcError(1, '1 CANCELLED: Call cancelled'));
    await expect(withRetry(f.fn, h.opts)).resolves.toBe('ok');
    expect(f.calls()).toBe(4);
    expect(h.lines).toEqual([`telastic: waiting for Temporal at ${h.opts.address} (UNAVAILABLE) …`, `telastic: connected to Temporal at ${h.opts.address} after 1.1 s`]);
    expect(h.sleeps).toEqual([150, 300, 600]);
  });

  test('a fatal error is thrown at once, silently', async () => {
    const h = harness();
    const err = new JobInputError('bad', 'j');
    const f = failing(err);
    await expect(withRetry(f.fn, h.opts)).rejects.toBe(err);
    expect(f.calls()).toBe(1);
    expect(h.lines).toEqual([]);
  });

  test('gives up after the patience with one line that names the address, reason and the setting', async () => {
    const h = harness({ patienceMs: 20_000, patienceName: '--connect-timeout' });
    const fn = async () => {
      throw grpcError(14, '14 UNAVAILABLE: x');
    };
    const err = (await withRetry(fn, h.opts).catch((e: unknown) => e)) as TemporalUnavailableError;
    expect(err).toBeInstanceOf(TemporalUnavailableError);
    expect(err.message).toBe(`gave up waiting for Temporal at ${h.opts.address} after 20 s (UNAVAILABLE); raise --connect-timeout to wait longer`);
    expect(h.elapsed()).toBe(20_000);
    expect(h.lines).toHaveLength(1);
    expect(Math.max(...h.sleeps)).toBeLessThanOrEqual(5000);
  });

  test('NamespaceNotFound during warm-up is waited out', async () => {
    const h = harness();
    const f = failing(...Array.from({ length: 5 }, () => new NamespaceNotFoundError('default')));
    await expect(withRetry(f.fn, { ...h.opts, probeNamespace: async () => { throw new Error('must not be asked in the window'); } })).resolves.toBe('ok');
    expect(h.lines[0]).toBe(`telastic: waiting for Temporal at ${h.opts.address} (namespace default not ready) …`);
  });

  test('a namespace that stays missing and that describeNamespace confirms missing is reported after the grace window', async () => {
    const h = harness();
    const fn = async () => {
      throw new NamespaceNotFoundError('nope');
    };
    const probe = async () => {
      throw grpcError(5, '5 NOT_FOUND: Namespace nope is not found.');
    };
    const err = (await withRetry(fn, { ...h.opts, probeNamespace: probe }).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(NamespaceMissingError);
    expect(err.message).toBe(`namespace nope does not exist on Temporal at ${h.opts.address} (create it with: temporal operator namespace create --namespace nope)`);
    expect(h.elapsed()).toBeGreaterThanOrEqual(10_000);
    expect(h.elapsed()).toBeLessThan(16_000);
  });

  test('a namespace that describeNamespace finds is still being loaded: keep waiting', async () => {
    const h = harness();
    const f = failing(...Array.from({ length: 12 }, () => new NamespaceNotFoundError('default')));
    let probes = 0;
    await expect(withRetry(f.fn, { ...h.opts, probeNamespace: async () => probes++ })).resolves.toBe('ok');
    expect(h.elapsed()).toBeGreaterThan(20_000);
    expect(probes).toBe(2); // once per grace window, not on every failure
  });

  test('without a probe the window alone decides', async () => {
    const h = harness();
    const fn = async () => {
      throw new NamespaceNotFoundError('nope');
    };
    await expect(withRetry(fn, h.opts)).rejects.toBeInstanceOf(NamespaceMissingError);
  });

  test('concurrent calls waiting for one address print one waiting and one connected line', async () => {
    const h = harness();
    const a = failing(grpcError(14, 'x'), grpcError(14, 'x'));
    const b = failing(grpcError(14, 'x'), grpcError(14, 'x'), grpcError(14, 'x'));
    await Promise.all([withRetry(a.fn, h.opts), withRetry(b.fn, h.opts)]);
    expect(h.lines.filter((l) => l.includes('waiting'))).toHaveLength(1);
    expect(h.lines.filter((l) => l.includes('connected'))).toHaveLength(1);
  });

  test('with a ping, "connected" is said when the server answers again, before a long call ends', async () => {
    const h = harness();
    const f = failing(grpcError(14, 'x'), grpcError(14, 'x'));
    const pings = failing(grpcError(14, 'x'));
    const fn = async () => {
      const r = await f.fn();
      h.lines.push('long call ended');
      return r;
    };
    await withRetry(fn, { ...h.opts, ping: pings.fn });
    expect(h.lines).toEqual([expect.stringContaining('waiting for Temporal'), expect.stringContaining('connected to Temporal'), 'long call ended']);
    expect(pings.calls()).toBe(3); // failed once (counted as a failure), then answered before each retry of fn
  });

  test('a long call that worked for a while and then failed begins a new outage with a new patience and a new line', async () => {
    const h = harness({ patienceMs: 20_000 });
    let calls = 0;
    const fn = async () => {
      calls++;
      if (calls === 2) h.advance(3_600_000); // the job ran for an hour, then the server went away
      if (calls < 4) throw grpcError(14, 'x');
      return 'ok';
    };
    await expect(withRetry(fn, h.opts)).resolves.toBe('ok');
    expect(calls).toBe(4);
    expect(h.lines.filter((l) => l.includes('waiting'))).toHaveLength(2);
    expect(h.sleeps).toEqual([150, 150, 300]); // the backoff starts over
  });

  test('an abort stops the waiting with the last error', async () => {
    const ac = new AbortController();
    const h = harness({ signal: ac.signal });
    const err = grpcError(14, 'x');
    const fn = async () => {
      ac.abort();
      throw err;
    };
    await expect(withRetry(fn, h.opts)).rejects.toBe(err);
  });
});
