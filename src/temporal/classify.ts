/**
 * Which errors from `@temporalio/client` and the worker's `NativeConnection` mean "the server is
 * not up yet, restarting or overloaded" (wait and try again), and which mean something else.
 * Pure: no I/O, unit-tested with the shapes the SDK really throws (see test/temporal/retry.test.ts).
 */

/** What to do about an error. */
export type Verdict =
  /** Not up, restarting or overloaded: wait and try again. `reason` is shown to the user. */
  | { kind: 'transient'; reason: string }
  /** The server said the namespace does not exist: warm-up, or really missing (see retry.ts). */
  | { kind: 'namespace'; namespace: string }
  /**
   * The server (or a proxy in front of it) refused our credentials: UNAUTHENTICATED or
   * PERMISSION_DENIED. Waiting does not help; `reason` is the code and the server's words.
   */
  | { kind: 'refused'; code: 'UNAUTHENTICATED' | 'PERMISSION_DENIED'; reason: string }
  /** Anything else (a rejected input, a failed job, a bug): not ours to retry. */
  | { kind: 'fatal' };

/** gRPC status codes that mean "try again later" (grpc/status.h), by number and by name. */
const TRANSIENT_CODES: Record<number, string> = {
  1: 'CANCELLED',
  4: 'DEADLINE_EXCEEDED',
  8: 'RESOURCE_EXHAUSTED',
  14: 'UNAVAILABLE',
};
/** Core (Rust/tonic) spells the same codes in CamelCase inside TransportError messages. */
const TONIC_CODES: Record<string, string> = {
  Cancelled: 'CANCELLED',
  DeadlineExceeded: 'DEADLINE_EXCEEDED',
  ResourceExhausted: 'RESOURCE_EXHAUSTED',
  Unavailable: 'UNAVAILABLE',
};
/** Messages of errors that carry no code: the transport gave up before any gRPC status. */
const TRANSIENT_MESSAGES: [RegExp, string][] = [
  [/ECONNREFUSED|connection refused/i, 'connection refused'],
  [/ECONNRESET|connection reset|broken pipe|EPIPE/i, 'connection reset'],
  [/Failed to connect before the deadline|No connection established|tcp connect error|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH/i, 'not reachable'],
  [/RST_STREAM/i, 'stream reset'],
  [/Call cancelled/i, 'CANCELLED'],
  [/Deadline exceeded|DEADLINE_EXCEEDED/i, 'DEADLINE_EXCEEDED'],
  [/UNAVAILABLE/, 'UNAVAILABLE'],
  [/RESOURCE_EXHAUSTED/, 'RESOURCE_EXHAUSTED'],
];
/**
 * Credentials refused, by number (grpc-js) and in core's words: tonic prints a status code by its
 * description (`code: 'The request does not have valid authentication credentials', message: "…"`).
 */
const REFUSED_CODES: Record<number, 'UNAUTHENTICATED' | 'PERMISSION_DENIED'> = { 16: 'UNAUTHENTICATED', 7: 'PERMISSION_DENIED' };
const REFUSED_MESSAGES: [RegExp, 'UNAUTHENTICATED' | 'PERMISSION_DENIED'][] = [
  [/valid authentication credentials|code: Unauthenticated\b|\bUNAUTHENTICATED\b/, 'UNAUTHENTICATED'],
  [/does not have permission to execute|code: PermissionDenied\b|\bPERMISSION_DENIED\b/, 'PERMISSION_DENIED'],
];

/**
 * The server's words in a refusal: grpc-js's `details`, core's `message: "…"` (connecting), or
 * the message itself of a core service call's ServiceError (its `details` is empty).
 */
function refusal(code: 'UNAUTHENTICATED' | 'PERMISSION_DENIED', e: ErrorLike, message: string): Verdict {
  const details = (typeof e.details === 'string' && e.details) || /message: "([^"]*)"/.exec(message)?.[1] || (typeof e.details === 'string' ? message : undefined);
  return { kind: 'refused', code, reason: details ? `${code}: ${details}` : code };
}

/** The server's own wording for a missing namespace, from describeNamespace and core. */
const NAMESPACE_MESSAGE = /Namespace (\S+?)'? (?:is not found|was not found)/;

/** Errors that carry a job's or an input's story, or a wait that already gave up: never retried. */
const FATAL_NAMES = new Set([
  'WorkflowFailedError',
  'WorkflowNotFoundError',
  'WorkflowExecutionAlreadyStartedError',
  'WorkflowUpdateFailedError',
  'ApplicationFailure',
  'CancelledFailure',
  'TerminatedFailure',
  'TimeoutFailure',
  'JobInputError',
  'UsageError',
  'TemporalUnavailableError',
  'NamespaceMissingError',
  'TemporalRefusedError',
  'NamespaceSetupError',
]);

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  namespace?: unknown;
  /** grpc-js: the status message without its code. */
  details?: unknown;
  cause?: unknown;
}

/** Walk `err` and its `cause` chain (the SDK wraps gRPC errors in its own). */
function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  let e: unknown = err;
  while (e !== null && typeof e === 'object' && out.length < 8) {
    out.push(e as ErrorLike);
    e = (e as ErrorLike).cause;
  }
  return out;
}

function one(e: ErrorLike): Verdict | null {
  const message = typeof e.message === 'string' ? e.message : '';
  if (e.name === 'NamespaceNotFoundError' && typeof e.namespace === 'string') return { kind: 'namespace', namespace: e.namespace };
  const ns = NAMESPACE_MESSAGE.exec(message);
  // Core: "Namespace x was not found or otherwise could not be described: Status { code: NotFound …";
  // the same wording with another code is an overloaded server, handled below.
  if (ns && (!/code: (\w+)/.test(message) || /code: NotFound/.test(message))) return { kind: 'namespace', namespace: ns[1].replace(/^'/, '') };
  if (typeof e.code === 'number' && REFUSED_CODES[e.code]) return refusal(REFUSED_CODES[e.code], e, message);
  for (const [re, code] of REFUSED_MESSAGES) if (re.test(message)) return refusal(code, e, message);
  if (typeof e.code === 'number' && TRANSIENT_CODES[e.code]) return { kind: 'transient', reason: TRANSIENT_CODES[e.code] };
  if (typeof e.code === 'string' && /^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH)$/.test(e.code)) {
    return { kind: 'transient', reason: e.code === 'ECONNREFUSED' ? 'connection refused' : e.code };
  }
  const tonic = /code: (\w+)/.exec(message);
  if (tonic && TONIC_CODES[tonic[1]]) return { kind: 'transient', reason: TONIC_CODES[tonic[1]] };
  for (const [re, reason] of TRANSIENT_MESSAGES) if (re.test(message)) return { kind: 'transient', reason };
  return null;
}

/**
 * Classify an error from a Temporal call. The first link of the cause chain that says something
 * decides; a gRPC code outside the transient set (NOT_FOUND of a workflow, INVALID_ARGUMENT, a
 * workflow's own failure) is fatal, so a failed job is never mistaken for a server outage.
 */
export function classify(err: unknown): Verdict {
  for (const e of chain(err)) {
    // Checked first: a job that failed with "connection refused" in its message is still a failed job.
    if (typeof e.name === 'string' && FATAL_NAMES.has(e.name)) return { kind: 'fatal' };
    const v = one(e);
    if (v) return v;
    if (typeof e.code === 'number' && e.code !== 0) return { kind: 'fatal' };
  }
  return { kind: 'fatal' };
}

/** Backoff settings. */
export interface Backoff {
  /** First wait. @default 200 */
  initialMs: number;
  /** Largest wait. @default 5_000 */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 200, maxMs: 5_000 };

/**
 * Wait before retry number `attempt` (0-based): capped exponential, with "equal jitter" (half
 * fixed, half random) so that 64 agents restarting together do not call the server in step.
 */
export function backoffMs(attempt: number, b: Backoff = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const ceiling = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
