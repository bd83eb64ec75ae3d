/**
 * What telastic needs of a namespace, looked at and put in place: the namespace exists, and
 * telastic's custom search attributes (search-attributes.ts) are registered with their types.
 * `telastic setup` adds the missing ones through the operator API; `telastic controller` only
 * looks (listing needs no more than any worker may do) and says once what is missing.
 *
 * Without them jobs still run: a job upserts its search attributes only when its submitter saw
 * them registered (`spec.searchAttributes`, decided at submission), because an upsert of an
 * unregistered attribute fails the workflow task, again and again. But such a job never gets
 * them, even once they are registered: the Web UI's job list cannot filter on it.
 */
import type { Connection } from '@temporalio/client';
import { classify } from './classify';
import { CLI_TYPE_NAMES, INDEXED_VALUE_TYPE, TELASTIC_SEARCH_ATTRIBUTES } from './search-attributes';

/** The calls used, on a client `Connection` or a worker `NativeConnection`. */
export interface SetupConnection {
  workflowService: Pick<Connection['workflowService'], 'describeNamespace'>;
  operatorService: Pick<Connection['operatorService'], 'listSearchAttributes' | 'addSearchAttributes'>;
}

/** Runs one Temporal call, waiting out an unavailable server (connect.ts's `retrying`). */
export type Retry = <T>(fn: () => Promise<T>) => Promise<T>;

export interface AttributeState {
  name: string;
  /** The `temporal` CLI's type name (`Keyword`). */
  type: string;
  state: 'registered' | 'missing' | 'other-type';
  /** With `other-type`: the type it is registered with. */
  actual?: string;
}

/**
 * A line that ends `telastic setup`: the namespace is missing, an attribute has another type, or
 * the caller may not do what setup needs. Never retried (classify.ts's FATAL_NAMES).
 */
export class NamespaceSetupError extends Error {
  public override readonly name = 'NamespaceSetupError';
}

const TYPE_BY_NUMBER = new Map(Object.entries(INDEXED_VALUE_TYPE).map(([sdk, n]) => [n, CLI_TYPE_NAMES[sdk as keyof typeof CLI_TYPE_NAMES]]));

/** Each of telastic's attributes against the namespace's custom attributes (name → IndexedValueType). */
export function compareAttributes(custom: Record<string, number> | null | undefined): AttributeState[] {
  return TELASTIC_SEARCH_ATTRIBUTES.map((key) => {
    const type = CLI_TYPE_NAMES[key.type];
    const have = custom?.[key.name];
    if (have === undefined || have === null) return { name: key.name, type, state: 'missing' };
    if (have === INDEXED_VALUE_TYPE[key.type]) return { name: key.name, type, state: 'registered' };
    return { name: key.name, type, state: 'other-type', actual: TYPE_BY_NUMBER.get(have) ?? `type ${have}` };
  });
}

/** `72h`, `90m`, `45s`: a retention as Temporal's CLI takes it, in the largest whole unit up to hours. */
export function formatRetention(seconds: number): string {
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

export function missingNamespaceLine(namespace: string, address: string): string {
  return `namespace ${namespace} does not exist on Temporal at ${address}; create it with: temporal operator namespace create --namespace ${namespace}`;
}

export function otherTypeLine(namespace: string, a: AttributeState): string {
  return `search attribute ${a.name} is registered in namespace ${namespace} as ${a.actual}, telastic needs ${a.type}; remove it (temporal operator search-attribute remove --namespace ${namespace} --name ${a.name}) or use another namespace`;
}

/**
 * The one line for a refused call: what this caller may not do and what to ask the cluster's
 * admin for. `reason` is classify.ts's (the code and the server's words).
 */
export function refusedLine(step: 'describe' | 'list' | 'add', namespace: string, reason: string): string {
  const ask = `ask the cluster's admin to run \`telastic setup --namespace ${namespace}\``;
  if (step === 'add') return `this caller may not add search attributes to namespace ${namespace} (${reason}); ${ask} or to grant this caller the operator API's AddSearchAttributes`;
  const call = step === 'describe' ? 'DescribeNamespace' : "the operator API's ListSearchAttributes";
  return `this caller may not read namespace ${namespace} (${reason}); ${ask} or to grant this caller ${call}`;
}

/** `call`, with a refusal or a missing namespace turned into its one line. */
async function step<T>(what: 'describe' | 'list' | 'add', namespace: string, address: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const v = classify(err);
    if (v.kind === 'refused') throw new NamespaceSetupError(refusedLine(what, namespace, v.reason), { cause: err });
    // describeNamespace reads the namespace store, not a cache that may still be loading: absent is absent.
    if (v.kind === 'namespace' || (what === 'describe' && (err as { code?: unknown }).code === 5)) throw new NamespaceSetupError(missingNamespaceLine(namespace, address), { cause: err });
    throw err;
  }
}

/** The namespace's retention in seconds (it must exist), and each attribute's state. */
export async function inspectNamespace(conn: SetupConnection, namespace: string, address: string, retry: Retry): Promise<{ retentionS?: number; attributes: AttributeState[] }> {
  const described = await retry(() => step('describe', namespace, address, () => conn.workflowService.describeNamespace({ namespace })));
  const ttl = described.config?.workflowExecutionRetentionTtl?.seconds;
  const listed = await retry(() => step('list', namespace, address, () => conn.operatorService.listSearchAttributes({ namespace })));
  return { retentionS: ttl === undefined || ttl === null ? undefined : Number(ttl), attributes: compareAttributes(listed.customAttributes) };
}

/**
 * `telastic setup`: register what is missing, and say one line per thing. An attribute of another
 * type is an error before anything is added (adding the others would leave a half set-up namespace).
 */
export async function setupNamespace(conn: SetupConnection, namespace: string, address: string, retry: Retry, say: (line: string) => void): Promise<void> {
  const { retentionS, attributes } = await inspectNamespace(conn, namespace, address, retry);
  const wrong = attributes.find((a) => a.state === 'other-type');
  if (wrong) throw new NamespaceSetupError(otherTypeLine(namespace, wrong));
  const missing = attributes.filter((a) => a.state === 'missing');
  if (missing.length > 0) {
    const searchAttributes = Object.fromEntries(TELASTIC_SEARCH_ATTRIBUTES.filter((k) => missing.some((m) => m.name === k.name)).map((k) => [k.name, INDEXED_VALUE_TYPE[k.type]]));
    // ALREADY_EXISTS: another `telastic setup` got there first; the listing below decides.
    const add = () => conn.operatorService.addSearchAttributes({ namespace, searchAttributes }).catch((err: { code?: unknown }) => {
      if (err?.code !== 6) throw err;
    });
    await retry(() => step('add', namespace, address, add));
    await confirmListed(conn, namespace, address, retry, missing.map((m) => m.name));
  }
  say(`namespace ${namespace}: retention ${retentionS === undefined ? 'unknown' : formatRetention(retentionS)}`);
  for (const a of attributes) say(`search attribute ${a.name} (${a.type}): ${a.state === 'missing' ? 'registered' : 'already registered'}`);
}

/**
 * List until `names` are registered: a server may take a moment to show what it just accepted.
 * Bounded; what is still not listed then is an error.
 */
async function confirmListed(conn: SetupConnection, namespace: string, address: string, retry: Retry, names: string[], patienceMs = 15_000): Promise<void> {
  const deadline = Date.now() + patienceMs;
  for (;;) {
    const listed = await retry(() => step('list', namespace, address, () => conn.operatorService.listSearchAttributes({ namespace })));
    const notYet = compareAttributes(listed.customAttributes).filter((a) => names.includes(a.name) && a.state !== 'registered');
    if (notYet.length === 0) return;
    if (Date.now() > deadline) throw new NamespaceSetupError(`namespace ${namespace}: the server accepted search attributes ${notYet.map((a) => a.name).join(', ')} but does not list them after ${patienceMs / 1000} s; run \`telastic setup\` again`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The controller's warning for what `attributes` lack, or null when all are in place. */
export function lacksLine(namespace: string, attributes: AttributeState[]): string | null {
  const missing = attributes.filter((a) => a.state === 'missing').map((a) => a.name);
  const wrong = attributes.filter((a) => a.state === 'other-type').map((a) => `${a.name} as ${a.actual}, not ${a.type}`);
  if (missing.length === 0 && wrong.length === 0) return null;
  const what = [missing.length > 0 ? `lacks telastic's search attributes ${missing.join(', ')}` : '', wrong.length > 0 ? `has ${wrong.join(', ')}` : ''].filter(Boolean).join(' and ');
  return `warning: namespace ${namespace} ${what}: jobs run without them, and the Web UI's job list cannot filter on them (jobs submitted meanwhile never get them); run \`telastic setup\``;
}

/**
 * The controller's look at its namespace (read-only, one attempt: the server just answered): the
 * warning line, or null when all is in place. A failure to look is a warning too, not a stop.
 */
export async function searchAttributesWarning(conn: SetupConnection, namespace: string, timeoutMs = 5_000): Promise<string | null> {
  try {
    const listed = await within(timeoutMs, conn.operatorService.listSearchAttributes({ namespace }));
    return lacksLine(namespace, compareAttributes(listed.customAttributes));
  } catch (err) {
    const v = classify(err);
    const why = v.kind === 'refused' || v.kind === 'transient' ? v.reason : String((err as Error).message).split('\n')[0];
    return `warning: cannot check telastic's search attributes in namespace ${namespace} (${why}); \`telastic setup\` registers them`;
  }
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
