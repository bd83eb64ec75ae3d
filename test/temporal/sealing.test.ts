/** The sealing codec and its key files: pure, no Temporal. */
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { compileConnectionOptions } from '../../src/cli/connection-options';
import { UsageError } from '../../src/config/errors';
import { readSealingKey, readSealingKeys, telasticDataConverter } from '../../src/temporal/data-converter';
import { refusalOf } from '../../src/temporal/refused-payload';
import { ENCODING, FORMAT, KEY_ID, RefusedPayloadError, SealedPayloadError, SealingCodec, keyId, type SealingKey } from '../../src/temporal/sealing';

const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-sealing-'));
const newKey = (name: string): SealingKey => {
  const key = randomBytes(32);
  return { id: keyId(key), key, source: name };
};
const text = (u?: Uint8Array | null) => Buffer.from(u ?? new Uint8Array()).toString();
const spec = defaultPayloadConverter.toPayload({ script: '/home/ann/train.py', args: ['--lr', '0.1'], address: '10.1.2.3' }) as Payload;

test('a payload is sealed with the first key and unsealed to the same payload', async () => {
  const k = newKey('k');
  const codec = new SealingCodec([k]);
  const [sealed] = await codec.encode([spec]);
  expect(text(sealed.metadata?.encoding)).toBe(ENCODING);
  expect(text(sealed.metadata?.[KEY_ID])).toBe(k.id);
  expect(text(sealed.data)).not.toContain('train.py');
  const [back] = await codec.decode([sealed]);
  expect(defaultPayloadConverter.fromPayload(back)).toEqual({ script: '/home/ann/train.py', args: ['--lr', '0.1'], address: '10.1.2.3' });
  // A fresh IV every time: the same payload never seals to the same bytes.
  const [again] = await codec.encode([spec]);
  expect(Buffer.from(again.data!).equals(Buffer.from(sealed.data!))).toBe(false);
});

test('key ids come from the key: 16 hex digits, stable, different for different keys', () => {
  const key = Buffer.alloc(32, 7);
  expect(keyId(key)).toMatch(/^[0-9a-f]{16}$/);
  expect(keyId(Buffer.alloc(32, 7))).toBe(keyId(key));
  expect(keyId(Buffer.alloc(32, 8))).not.toBe(keyId(key));
});

test('rotation: a new key seals, the old one still unseals what it sealed', async () => {
  const old = newKey('old');
  const next = newKey('new');
  const [byOld] = await new SealingCodec([old]).encode([spec]);
  const rotated = new SealingCodec([next, old]);
  const [byNew] = await rotated.encode([spec]);
  expect(text(byNew.metadata?.[KEY_ID])).toBe(next.id);
  expect(await rotated.decode([byOld, byNew])).toEqual([spec, spec].map((p) => expect.objectContaining({ data: p.data })));
});

const ACCEPT = '--accept-unsealed (or TELASTIC_ACCEPT_UNSEALED=1)';
const UNSEALED = `unsealed payload (json/plain) refused: this process has a key (TELASTIC_ENCRYPTION_KEY_FILE) and opens only payloads sealed with it; to read histories written before the key, start it with ${ACCEPT}`;
const ctx = (namespace: string) => ({ type: 'workflow' as const, namespace, workflowId: 'job-42' });

test('with a key, an unsealed payload is refused in one line naming --accept-unsealed; with it, it passes (the upgrade window)', async () => {
  const k = newKey('k');
  const heard: Error[] = [];
  const err = await new SealingCodec([k], { onForeignKey: (e) => heard.push(e) }).decode([spec]).catch((e: Error) => e);
  expect(err).toBeInstanceOf(RefusedPayloadError);
  expect((err as Error).message).toBe(UNSEALED);
  expect(heard).toEqual([]); // not a missing key: the process does not stop on it
  expect(await new SealingCodec([k], { acceptUnsealed: true }).decode([spec])).toEqual([spec]);
  // Without any key nothing is refused, and nothing is sealed.
  expect(await new SealingCodec([]).decode([spec])).toEqual([spec]);
  expect(await new SealingCodec([]).encode([spec])).toEqual([spec]);
});

test("a worker's codec hands a stand-in no schema accepts in place of a refused payload, and says so", async () => {
  const refused: string[] = [];
  const worker = new SealingCodec([newKey('k')], { standIn: true, onRefused: (e) => refused.push(e.message) });
  const [standIn] = await worker.decode([spec]);
  expect(refusalOf(defaultPayloadConverter.fromPayload(standIn))).toBe(UNSEALED);
  expect(refused).toEqual([UNSEALED]);
  expect(refusalOf({ script: 'x' })).toBeNull();
});

test('a seal binds its namespace: it opens there, and in another namespace it is refused in one line', async () => {
  const k = newKey('k');
  const codec = new SealingCodec([k], { namespace: 'team-a' });
  const [sealed] = await codec.encode([spec], ctx('team-a'));
  expect(text(sealed.metadata?.[FORMAT])).toBe('2');
  expect(defaultPayloadConverter.fromPayload((await codec.decode([sealed], ctx('team-a')))[0])).toEqual(defaultPayloadConverter.fromPayload(spec));
  // Without a context, the process's own namespace.
  expect(await codec.decode([sealed])).toEqual([expect.objectContaining({ data: spec.data })]);
  for (const opener of [codec, new SealingCodec([k], { acceptUnsealed: true })]) {
    const err = await opener.decode([sealed], ctx('team-b')).catch((e: Error) => e);
    expect(err).toBeInstanceOf(RefusedPayloadError);
    expect((err as Error).message).toBe(`sealed payload does not open in namespace team-b under key ${k.id} (k): sealed for another namespace, tampered with, or another key with the same id`);
  }
  // The mark cannot be stripped to pass the seal off as an older one (its namespace unbound).
  const stripped = { ...sealed, metadata: { encoding: sealed.metadata!.encoding, [KEY_ID]: sealed.metadata![KEY_ID] } };
  await expect(new SealingCodec([k], { acceptUnsealed: true }).decode([stripped], ctx('team-a'))).rejects.toThrow(/^sealed payload does not open under key/);
});

test('a seal of an older telastic (no namespace bound) opens only with --accept-unsealed', async () => {
  const k = newKey('k');
  const plain = Buffer.from(temporal.api.common.v1.Payload.encode(spec).finish());
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', k.key, iv);
  const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  const old: Payload = { metadata: { encoding: Buffer.from(ENCODING), [KEY_ID]: Buffer.from(k.id) }, data };
  await expect(new SealingCodec([k]).decode([old])).rejects.toThrow(`payload sealed without its namespace (by a telastic before seals bound it) refused: to read histories written before this upgrade, start this process with ${ACCEPT}`);
  expect(await new SealingCodec([k], { acceptUnsealed: true }).decode([old])).toEqual([expect.objectContaining({ data: spec.data })]);
});

test('--accept-unsealed and TELASTIC_ACCEPT_UNSEALED=1 compile into the connection options; absent by default', () => {
  expect(compileConnectionOptions({}, {}).acceptUnsealed).toBeUndefined();
  expect(compileConnectionOptions({ acceptUnsealed: true }, {}).acceptUnsealed).toBe(true);
  expect(compileConnectionOptions({}, { TELASTIC_ACCEPT_UNSEALED: '1' }).acceptUnsealed).toBe(true);
  expect(compileConnectionOptions({}, { TELASTIC_ACCEPT_UNSEALED: '0' }).acceptUnsealed).toBeUndefined();
  expect(() => compileConnectionOptions({}, { TELASTIC_ACCEPT_UNSEALED: 'yes' })).toThrow(/TELASTIC_ACCEPT_UNSEALED/);
});

test('a payload sealed with another key, or none configured, fails with one line naming the key', async () => {
  const [sealed] = await new SealingCodec([newKey('a')]).encode([spec]);
  const id = text(sealed.metadata?.[KEY_ID]);
  const heard: SealedPayloadError[] = [];
  const none = new SealingCodec([], { onForeignKey: (e) => heard.push(e) });
  await expect(none.decode([sealed])).rejects.toThrow(`payload sealed with key ${id}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (none set)`);
  expect(heard).toHaveLength(1);
  expect(heard[0]).toBeInstanceOf(SealedPayloadError);
  const other = newKey('b');
  const err = await new SealingCodec([other]).decode([sealed]).catch((e: Error) => e);
  expect(err).toBeInstanceOf(SealedPayloadError);
  expect((err as Error).message).toBe(`payload sealed with key ${id}, not among TELASTIC_ENCRYPTION_KEY_FILE's keys (it has ${other.id})`);
  expect((err as Error).message).not.toContain('\n');
});

test('a tampered payload does not authenticate: one line, never garbage', async () => {
  const k = newKey('k');
  const codec = new SealingCodec([k]);
  const [sealed] = await codec.encode([spec]);
  const data = Buffer.from(sealed.data!);
  data[20] ^= 1;
  await expect(codec.decode([{ ...sealed, data }])).rejects.toThrow(new RegExp(`^sealed payload does not open in namespace default under key ${k.id}`));
  await expect(codec.decode([{ ...sealed, data: data.subarray(0, 10) }])).rejects.toThrow(/truncated/);
});

test('key files: base64 of 32 bytes as openssl writes it (with its newline)', async () => {
  const key = randomBytes(32);
  const file = path.join(dir, 'good.key');
  writeFileSync(file, `${key.toString('base64')}\n`);
  await expect(readSealingKey(file, '--encryption-key-file')).resolves.toEqual({ id: keyId(key), key, source: file });
});

test.each([
  ['missing', null, /^TELASTIC_ENCRYPTION_KEY_FILE: .*missing\.key: cannot read the key file \(ENOENT\)$/],
  ['not base64', 'not a key!', /^TELASTIC_ENCRYPTION_KEY_FILE: .*: not a base64 key \(make one with: openssl rand -base64 32\)$/],
  ['16 bytes', randomBytes(16).toString('base64'), /: the key is 16 bytes, expected 32/],
  ['empty', '', /: not a base64 key/],
])('a bad key file (%s) is a one-line usage error naming the variable and the file', async (name, content, message) => {
  const file = path.join(dir, `${name.replace(/ /g, '-')}.key`);
  if (content !== null) writeFileSync(file, content);
  const err = await readSealingKeys({ encryptionKeyFiles: { paths: [file], from: 'TELASTIC_ENCRYPTION_KEY_FILE' } }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(UsageError);
  expect((err as UsageError).message).toMatch(message);
  expect((err as UsageError).field).toBe('TELASTIC_ENCRYPTION_KEY_FILE');
});

test('--encryption-key-file beats TELASTIC_ENCRYPTION_KEY_FILE; several files are :-separated, the first seals', () => {
  const env = { TELASTIC_ENCRYPTION_KEY_FILE: '/k/new:/k/old' };
  expect(compileConnectionOptions({}, env).encryptionKeyFiles).toEqual({ paths: ['/k/new', '/k/old'], from: 'TELASTIC_ENCRYPTION_KEY_FILE' });
  expect(compileConnectionOptions({ encryptionKeyFile: '/k/flag' }, env).encryptionKeyFiles).toEqual({ paths: ['/k/flag'], from: '--encryption-key-file' });
  expect(compileConnectionOptions({}, {}).encryptionKeyFiles).toBeUndefined();
  expect(() => compileConnectionOptions({ encryptionKeyFile: ':' }, {})).toThrow('--encryption-key-file :: expected one or more key file paths');
});

test('the DataConverter seals failure messages only with a key', () => {
  expect(telasticDataConverter([]).failureConverterPath).toBeUndefined();
  expect(telasticDataConverter([newKey('k')]).failureConverterPath).toMatch(/failure-converter-sealed/);
  expect(telasticDataConverter([]).payloadCodecs?.[0]).toBeInstanceOf(SealingCodec);
});
