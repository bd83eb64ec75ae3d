/**
 * Sealed payloads: an AES-256-GCM payload codec. Every payload a telastic process hands to
 * Temporal (workflow and activity inputs and results, heartbeat details, messages, memo, user
 * metadata, failure attributes) is encrypted with the first key; decoding picks the key by the id
 * stored in the payload's metadata, so a new key can be added while old histories still decode.
 *
 * Integrity, not only confidentiality: each seal binds its namespace as GCM associated data (the
 * SDK's serialization context names it; the process's own namespace when it does not), so a seal
 * lifted from one namespace's history does not open in another's. With a key, a payload that is
 * not sealed this way (unsealed, or sealed by a telastic before namespaces were bound: no
 * FORMAT mark) is refused, unless the process was started with `--accept-unsealed`
 * (TELASTIC_ACCEPT_UNSEALED=1) for the upgrade window, when histories written before the key
 * are still running. Search attributes and the SDK's own headers and patch markers never pass
 * through a codec: they stay plain (test/e2e/history.ts `unsealedPayloads`).
 *
 * A refused payload is one line: thrown in a client; in a worker (`standIn`) replaced by a value
 * no schema accepts (refused-payload.ts), since a throw would fail the workflow task for ever.
 * A payload sealed with a key this process lacks is a SealedPayloadError naming the key, heard
 * by `onForeignKey` (a worker stops on it: a missing key is the operator's to fix).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { refusedPayload } from './refused-payload';

/** The metadata `encoding` of a sealed payload (as Temporal's encryption samples spell it). */
export const ENCODING = 'binary/encrypted';
/** The metadata key holding the id of the key that sealed the payload. */
export const KEY_ID = 'encryption-key-id';
export const CIPHER = 'aes-256-gcm';
/** The metadata key marking a seal that binds its namespace; older seals lack it. */
export const FORMAT = 'telastic-seal';
const FORMAT_VERSION = '2';
/** Where a process accepts unsealed payloads, named in the refusal's line. */
export const ACCEPT_UNSEALED = '--accept-unsealed (or TELASTIC_ACCEPT_UNSEALED=1)';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A 256-bit key and its id: the first 8 bytes of its SHA-256, hex (reveals nothing of the key). */
export interface SealingKey {
  id: string;
  key: Buffer;
  /** Where it came from, for messages (a file path). */
  source: string;
}

export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/**
 * Thrown when a payload cannot be unsealed: sealed with a key this process does not have, or
 * not authentic under the key with its id (tampered, truncated). One line; `keyId` says which
 * key it needs.
 */
export class SealedPayloadError extends Error {
  override readonly name = 'SealedPayloadError';

  constructor(
    message: string,
    readonly keyId: string,
  ) {
    super(message);
  }
}

/**
 * Thrown (in a client) for a payload this keyed process refuses: not sealed, sealed before seals
 * bound their namespace, or not authentic in this namespace. One line saying what to do.
 */
export class RefusedPayloadError extends Error {
  override readonly name = 'RefusedPayloadError';
}

/** Where the keys are configured, named in SealedPayloadError's message. */
export const KEY_SETTING = 'TELASTIC_ENCRYPTION_KEY_FILE';

const enc = new TextEncoder();
const dec = new TextDecoder();

export interface SealingOptions {
  /** The namespace a seal binds when the SDK passes no context. @default 'default' */
  namespace?: string;
  /** Open unsealed payloads and older seals (the upgrade window). @default false */
  acceptUnsealed?: boolean;
  /** A worker's codec: a refused payload becomes a stand-in (refused-payload.ts) rather than a throw. */
  standIn?: boolean;
  /**
   * Hears every payload sealed with a key this process lacks before it is thrown (a worker stops
   * on it: decoding inside a worker otherwise only fails the task, retried for ever).
   */
  onForeignKey?: (err: SealedPayloadError) => void;
  /** Hears every refused payload (a worker logs it). */
  onRefused?: (err: RefusedPayloadError) => void;
}

export class SealingCodec implements PayloadCodec {
  private readonly byId: Map<string, SealingKey>;

  /** `keys[0]` seals; all of them unseal. No keys: nothing is sealed or refused, and a sealed payload fails. */
  constructor(
    readonly keys: readonly SealingKey[],
    private readonly opts: SealingOptions = {},
  ) {
    this.byId = new Map(keys.map((k) => [k.id, k]));
  }

  get sealing(): boolean {
    return this.keys.length > 0;
  }

  private namespace(context: SerializationContext | undefined): string {
    return context?.namespace || this.opts.namespace || 'default';
  }

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const key = this.keys[0];
    if (!key) return payloads;
    const namespace = this.namespace(context);
    return payloads.map((p) => seal(p, key, namespace));
  }

  async decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const namespace = this.namespace(context);
    return payloads.map((p) => {
      try {
        return this.open(p, namespace);
      } catch (err) {
        if (err instanceof SealedPayloadError) this.opts.onForeignKey?.(err);
        if (!(err instanceof RefusedPayloadError)) throw err;
        this.opts.onRefused?.(err);
        if (!this.opts.standIn) throw err;
        return standIn(err.message);
      }
    });
  }

  private open(p: Payload, namespace: string): Payload {
    const encoding = text(p.metadata?.encoding);
    const keyed = this.keys.length > 0;
    const accept = !keyed || this.opts.acceptUnsealed === true;
    if (encoding !== ENCODING) {
      if (accept) return p;
      throw new RefusedPayloadError(`unsealed payload (${shown(encoding) || 'no encoding'}) refused: this process has a key (${KEY_SETTING}) and opens only payloads sealed with it; to read histories written before the key, start it with ${ACCEPT_UNSEALED}`);
    }
    const format = text(p.metadata?.[FORMAT]);
    if (format === '' && !accept) {
      throw new RefusedPayloadError(`payload sealed without its namespace (by a telastic before seals bound it) refused: to read histories written before this upgrade, start this process with ${ACCEPT_UNSEALED}`);
    }
    if (format !== '' && format !== FORMAT_VERSION) throw new RefusedPayloadError(`payload sealed in format ${shown(format)}, which this telastic does not know (it reads ${FORMAT_VERSION}): upgrade it`);
    return this.unseal(p, format === '' ? undefined : namespace);
  }

  private unseal(p: Payload, namespace: string | undefined): Payload {
    const id = text(p.metadata?.[KEY_ID]);
    const key = this.byId.get(id);
    if (!key) {
      const have = this.keys.length ? `it has ${this.keys.map((k) => k.id).join(', ')}` : 'none set';
      throw new SealedPayloadError(`payload sealed with key ${shown(id) || '(no id)'}, not among ${KEY_SETTING}'s keys (${have})`, id);
    }
    const data = Buffer.from(p.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new RefusedPayloadError(`sealed payload with key ${id} is truncated (${data.length} bytes)`);
    const decipher = createDecipheriv(CIPHER, key.key, data.subarray(0, IV_BYTES));
    if (namespace !== undefined) decipher.setAAD(associatedData(namespace));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      const where = namespace === undefined ? '' : ` in namespace ${namespace}`;
      throw new RefusedPayloadError(`sealed payload does not open${where} under key ${id} (${key.source}): sealed for another namespace, tampered with, or another key with the same id`);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

function text(b: Uint8Array | null | undefined): string {
  return dec.decode(b ?? new Uint8Array());
}

/** Metadata (whoever wrote the payload chose it) as shown in a message: printable ASCII, short. */
function shown(s: string): string {
  const safe = s.replace(/[^\x20-\x7e]/g, '?');
  return safe.length > 64 ? `${safe.slice(0, 64)}…` : safe;
}

/** What a seal authenticates besides its bytes: the format and the namespace. */
function associatedData(namespace: string): Buffer {
  return Buffer.from(`${FORMAT}/${FORMAT_VERSION}\n${namespace}`, 'utf8');
}

/** The JSON payload of a refused payload's stand-in. */
function standIn(reason: string): Payload {
  return { metadata: { encoding: enc.encode('json/plain') }, data: enc.encode(JSON.stringify(refusedPayload(reason))) };
}

function seal(p: Payload, key: SealingKey, namespace: string): Payload {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, key.key, iv);
  cipher.setAAD(associatedData(namespace));
  const plain = temporal.api.common.v1.Payload.encode(p).finish();
  const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return { metadata: { encoding: enc.encode(ENCODING), [KEY_ID]: enc.encode(key.id), [FORMAT]: enc.encode(FORMAT_VERSION) }, data };
}
