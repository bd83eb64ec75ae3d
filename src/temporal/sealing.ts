/**
 * Sealed payloads: an AES-256-GCM payload codec. Every payload a telastic process hands to
 * Temporal (workflow and activity inputs and results, heartbeat details, messages, memo, user
 * metadata, failure attributes) is encrypted with the first key; decoding picks the key by the id
 * stored in the payload's metadata, so a new key can be added while old histories still decode.
 * Payloads that were never sealed (histories recorded before a key was configured) pass through.
 *
 * A sealed payload whose key this process lacks is an error of one line (SealedPayloadError),
 * never garbage: with no keys at all the codec still runs, sealing nothing and naming the key a
 * sealed payload needs.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/** The metadata `encoding` of a sealed payload (as Temporal's encryption samples spell it). */
export const ENCODING = 'binary/encrypted';
/** The metadata key holding the id of the key that sealed the payload. */
export const KEY_ID = 'encryption-key-id';
export const CIPHER = 'aes-256-gcm';
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

/** Where the keys are configured, named in SealedPayloadError's message. */
export const KEY_SETTING = 'TELASTIC_ENCRYPTION_KEY_FILE';

const enc = new TextEncoder();
const dec = new TextDecoder();

export class SealingCodec implements PayloadCodec {
  private readonly byId: Map<string, SealingKey>;

  /**
   * `keys[0]` seals; all of them unseal. No keys: nothing is sealed and a sealed payload fails.
   * `onForeignKey` hears every SealedPayloadError before it is thrown (a worker stops on it:
   * decoding inside a worker otherwise only fails the task, and the task is retried for ever).
   */
  constructor(
    readonly keys: readonly SealingKey[],
    private readonly onForeignKey?: (err: SealedPayloadError) => void,
  ) {
    this.byId = new Map(keys.map((k) => [k.id, k]));
  }

  get sealing(): boolean {
    return this.keys.length > 0;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const key = this.keys[0];
    if (!key) return payloads;
    return payloads.map((p) => seal(p, key));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (dec.decode(p.metadata?.encoding ?? new Uint8Array()) !== ENCODING) return p;
      try {
        return this.unseal(p);
      } catch (err) {
        if (err instanceof SealedPayloadError) this.onForeignKey?.(err);
        throw err;
      }
    });
  }

  private unseal(p: Payload): Payload {
    const id = dec.decode(p.metadata?.[KEY_ID] ?? new Uint8Array());
    const key = this.byId.get(id);
    if (!key) {
      const have = this.keys.length ? `it has ${this.keys.map((k) => k.id).join(', ')}` : 'none set';
      throw new SealedPayloadError(`payload sealed with key ${id || '(no id)'}, not among ${KEY_SETTING}'s keys (${have})`, id);
    }
    const data = Buffer.from(p.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new SealedPayloadError(`sealed payload with key ${id} is truncated (${data.length} bytes)`, id);
    const decipher = createDecipheriv(CIPHER, key.key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SealedPayloadError(`sealed payload does not authenticate under key ${id} (${key.source}): tampered with, or another key with the same id`, id);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

function seal(p: Payload, key: SealingKey): Payload {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, key.key, iv);
  const plain = temporal.api.common.v1.Payload.encode(p).finish();
  const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return { metadata: { encoding: enc.encode(ENCODING), [KEY_ID]: enc.encode(key.id) }, data };
}
