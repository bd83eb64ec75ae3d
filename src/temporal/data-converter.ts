/**
 * The one place a telastic DataConverter is built: the sealing codec (sealing.ts) with the keys
 * of `--encryption-key-file` / TELASTIC_ENCRYPTION_KEY_FILE, and with a key the failure converter
 * that seals failure messages too. Every client and worker of telastic takes what this returns.
 * The codec is installed even without keys, so that a sealed payload is one clear line.
 */
import type { DataConverter } from '@temporalio/common';
import { readFile } from 'node:fs/promises';
import { UsageError } from '../config/errors';
import type { ConnectionOptions } from './types';
import { keyId, SealingCodec, type RefusedPayloadError, type SealedPayloadError, type SealingKey } from './sealing';

const KEY_BYTES = 32;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Read one key file (base64 of 32 bytes, as `openssl rand -base64 32` writes it). */
export async function readSealingKey(file: string, from: string): Promise<SealingKey> {
  const bad = (problem: string) => new UsageError(`${from}: ${file}: ${problem}`, from, file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    throw bad(`cannot read the key file (${code ?? String((cause as Error | undefined)?.message ?? cause)})`);
  }
  const b64 = text.trim();
  if (!BASE64.test(b64) || b64.length % 4 !== 0) throw bad('not a base64 key (make one with: openssl rand -base64 32)');
  const key = Buffer.from(b64, 'base64');
  if (key.length !== KEY_BYTES) throw bad(`the key is ${key.length} bytes, expected ${KEY_BYTES} (make one with: openssl rand -base64 32)`);
  return { id: keyId(key), key, source: file };
}

/** The keys `opts` names, the sealing one first; none when no key file is configured. */
export async function readSealingKeys(opts: Pick<ConnectionOptions, 'encryptionKeyFiles'>): Promise<SealingKey[]> {
  const files = opts.encryptionKeyFiles;
  if (!files) return [];
  return Promise.all(files.paths.map((p) => readSealingKey(p, files.from)));
}

/** What a DataConverter's codec is told besides its keys (see SealingOptions). */
export type SealingSettings = Pick<ConnectionOptions, 'encryptionKeyFiles'> & Partial<Pick<ConnectionOptions, 'namespace' | 'acceptUnsealed'>>;

/** The options of a worker process's codec: refused payloads become stand-ins, and are logged. */
function workerOptions(onForeignKey?: (err: SealedPayloadError) => void) {
  const onRefused = (err: RefusedPayloadError) => console.error(`telastic: ${err.message}`);
  return { standIn: true, onForeignKey, onRefused };
}

/**
 * The DataConverter for these keys. `onForeignKey` hears a payload this process cannot unseal;
 * workers pass one that stops the process, and `standIn` (see SealingCodec).
 */
export function telasticDataConverter(keys: readonly SealingKey[], opts: ConstructorParameters<typeof SealingCodec>[1] = {}): DataConverter {
  const codec = new SealingCodec(keys, opts);
  return keys.length > 0 ? { payloadCodecs: [codec], failureConverterPath: require.resolve('./failure-converter-sealed') } : { payloadCodecs: [codec] };
}

/** A worker process's DataConverter (a controller's, `telastic dev`'s): refused payloads become stand-ins. */
export function workerDataConverter(keys: readonly SealingKey[], settings: Omit<SealingSettings, 'encryptionKeyFiles'>, onForeignKey?: (err: SealedPayloadError) => void): DataConverter {
  return telasticDataConverter(keys, { namespace: settings.namespace, acceptUnsealed: settings.acceptUnsealed, ...workerOptions(onForeignKey) });
}

/** Read the key files `opts` names and build a client's DataConverter (a bad key file: UsageError). */
export async function dataConverterFor(opts: SealingSettings): Promise<DataConverter> {
  return telasticDataConverter(await readSealingKeys(opts), { namespace: opts.namespace, acceptUnsealed: opts.acceptUnsealed });
}

/**
 * For the TypeScript API: the DataConverter for these key files (the first seals), the same as
 * the CLI's with TELASTIC_ENCRYPTION_KEY_FILE. Pass it as `dataConverter` in ClientOptions.
 * Payloads that are not sealed are refused unless `acceptUnsealed`; seals bind the client's
 * namespace.
 */
export async function sealedDataConverter(keyFiles: readonly string[], opts: { acceptUnsealed?: boolean } = {}): Promise<DataConverter> {
  return dataConverterFor({ encryptionKeyFiles: { paths: [...keyFiles], from: 'key file' }, acceptUnsealed: opts.acceptUnsealed });
}

/**
 * The identity a worker or client of this process shows in every history event it causes: the
 * SDK's default names the host (`pid@host`), which a sealed job's history must not give away.
 */
export function sealedIdentity(dc: DataConverter | undefined, name: string): string | undefined {
  return isSealing(dc) ? name : undefined;
}

/** Whether a DataConverter from this module seals (its workers need the sealed workflow bundle). */
export function isSealing(dc: DataConverter | undefined): boolean {
  return dc?.failureConverterPath !== undefined;
}

/** What a worker process threads through: its DataConverter and news of a payload it cannot unseal. */
export interface Sealing {
  dataConverter: DataConverter;
  /** The keys, the sealing one first; none when no key file is configured. */
  keys: SealingKey[];
  /**
   * Settles with the first payload this process could not unseal (no key, or the wrong one). A
   * worker that meets one only fails the task, which Temporal retries for ever, so an agent or a
   * controller stops on it with the error's one line.
   */
  unsealable: Promise<SealedPayloadError>;
}

/** Read the key files `opts` names and build the worker process's Sealing (a bad key file: UsageError). */
export async function sealingFor(opts: SealingSettings): Promise<Sealing> {
  let heard: ((err: SealedPayloadError) => void) | undefined;
  const unsealable = new Promise<SealedPayloadError>((resolve) => (heard = resolve));
  const keys = await readSealingKeys(opts);
  return { dataConverter: workerDataConverter(keys, opts, (err) => heard?.(err)), keys, unsealable };
}
