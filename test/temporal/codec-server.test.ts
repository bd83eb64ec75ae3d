/** The codec server, over real HTTP: Temporal's remote codec protocol and its CORS. */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { MAX_BODY_BYTES, MAX_PAYLOADS } from '../../src/temporal/codec-body';
import { fromJSON, startCodecServer, toJSON, type CodecServer } from '../../src/temporal/codec-server';
import { SealingCodec, keyId } from '../../src/temporal/sealing';

const UI = 'http://localhost:8233';
const key = randomBytes(32);
const codec = new SealingCodec([{ id: keyId(key), key, source: 'test' }]);
let server: CodecServer;
beforeAll(async () => {
  server = await startCodecServer({ codec, port: 0, allowOrigins: [UI] });
});
afterAll(() => server.close());

const spec = defaultPayloadConverter.toPayload({ script: 'train.py', address: '10.1.2.3' }) as Payload;
const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${p}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers }, body: JSON.stringify(body) });

test('POST /decode opens sealed payloads; unsealed and foreign ones come back as they were', async () => {
  const [sealed] = await codec.encode([spec]);
  const other = new SealingCodec([{ id: 'ffffffffffffffff', key: randomBytes(32), source: 'other' }]);
  const [foreign] = await other.encode([spec]);
  const res = await post('/decode', { payloads: [sealed, spec, foreign].map(toJSON) });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json');
  const { payloads } = (await res.json()) as { payloads: Parameters<typeof fromJSON>[0][] };
  expect(defaultPayloadConverter.fromPayload(fromJSON(payloads[0]))).toEqual({ script: 'train.py', address: '10.1.2.3' });
  expect(payloads[1]).toEqual(toJSON(spec));
  expect(payloads[2]).toEqual(toJSON(foreign));
});

test("seals bind X-Namespace's namespace: sealed for team-a, opened for team-a only", async () => {
  const res = await post('/encode', { payloads: [toJSON(spec)] }, { 'X-Namespace': 'team-a' });
  const [sealed] = ((await res.json()) as { payloads: Parameters<typeof fromJSON>[0][] }).payloads;
  const ctx = (namespace: string) => ({ type: 'workflow' as const, namespace, workflowId: 'w' });
  expect(defaultPayloadConverter.fromPayload((await codec.decode([fromJSON(sealed)], ctx('team-a')))[0])).toEqual({ script: 'train.py', address: '10.1.2.3' });
  await expect(codec.decode([fromJSON(sealed)], ctx('default'))).rejects.toThrow(/does not open in namespace default/);
  // Decoded for another namespace, it comes back as it was.
  const other = await post('/decode', { payloads: [sealed] }, { 'X-Namespace': 'team-b' });
  expect(((await other.json()) as { payloads: unknown[] }).payloads[0]).toEqual(sealed);
  const same = await post('/decode', { payloads: [sealed] }, { 'X-Namespace': 'team-a' });
  expect(defaultPayloadConverter.fromPayload(fromJSON(((await same.json()) as { payloads: Parameters<typeof fromJSON>[0][] }).payloads[0]))).toEqual({ script: 'train.py', address: '10.1.2.3' });
});

test('POST /encode seals, under any path prefix (only the last part counts)', async () => {
  const res = await post('/codec/default/encode', { payloads: [toJSON(spec)] });
  expect(res.status).toBe(200);
  const { payloads } = (await res.json()) as { payloads: Parameters<typeof fromJSON>[0][] };
  expect(Buffer.from(payloads[0].metadata!.encoding, 'base64').toString()).toBe('binary/encrypted');
  expect(defaultPayloadConverter.fromPayload((await codec.decode([fromJSON(payloads[0])]))[0])).toEqual({ script: 'train.py', address: '10.1.2.3' });
});

test('CORS: the Web UI\'s origin gets a preflight and credentials; any other origin is refused', async () => {
  const pre = await fetch(`${server.url}/decode`, {
    method: 'OPTIONS',
    headers: { Origin: UI, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-namespace' },
  });
  expect(pre.status).toBe(204);
  expect(pre.headers.get('access-control-allow-origin')).toBe(UI);
  expect(pre.headers.get('access-control-allow-credentials')).toBe('true');
  expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
  expect(pre.headers.get('access-control-allow-headers')).toMatch(/X-Namespace/);
  const ok = await post('/decode', { payloads: [] }, { Origin: UI });
  expect(ok.status).toBe(200);
  expect(ok.headers.get('access-control-allow-origin')).toBe(UI);

  const evil = 'https://evil.example';
  const prEvil = await fetch(`${server.url}/decode`, { method: 'OPTIONS', headers: { Origin: evil, 'Access-Control-Request-Method': 'POST' } });
  expect(prEvil.status).toBe(403);
  expect(prEvil.headers.get('access-control-allow-origin')).toBeNull();
  const [sealed] = await codec.encode([spec]);
  const res = await post('/decode', { payloads: [toJSON(sealed)] }, { Origin: evil });
  expect(res.status).toBe(403);
  expect(await res.text()).not.toContain(toJSON(spec).data);
});

test('bad requests: not JSON, no payloads, wrong path or method', async () => {
  expect((await fetch(`${server.url}/decode`, { method: 'POST', body: 'nope' })).status).toBe(400);
  expect((await post('/decode', { nothing: 1 })).status).toBe(400);
  expect((await post('/other', { payloads: [] })).status).toBe(404);
  expect((await fetch(`${server.url}/decode`)).status).toBe(405);
});

test('the largest payload Temporal stores (2 MiB) decodes; a body over 4 MiB or over 4096 payloads is refused (413)', async () => {
  const big: Payload = { metadata: { encoding: Buffer.from('binary/plain') }, data: randomBytes(2 * 1024 * 1024) };
  const [sealed] = await codec.encode([big]);
  const res = await post('/decode', { payloads: [toJSON(sealed)] });
  expect(res.status).toBe(200);
  const { payloads } = (await res.json()) as { payloads: Parameters<typeof fromJSON>[0][] };
  expect(Buffer.from(fromJSON(payloads[0]).data!).equals(Buffer.from(big.data!))).toBe(true);

  const many = (n: number) => post('/decode', { payloads: Array.from({ length: n }, () => ({})) });
  expect((await many(MAX_PAYLOADS)).status).toBe(200);
  const over = await many(MAX_PAYLOADS + 1);
  expect(over.status).toBe(413);
  expect(await over.text()).toBe(`more than ${MAX_PAYLOADS} payloads in one request\n`);
  // Commas inside strings are not entries.
  expect((await post('/decode', { payloads: [{ metadata: { encoding: Buffer.from(','.repeat(MAX_PAYLOADS + 1)).toString('base64') }, data: ',' }] })).status).toBe(200);
  const huge = await post('/decode', { payloads: [{ data: 'A'.repeat(MAX_BODY_BYTES) }] });
  expect(huge.status).toBe(413);
  expect((await post('/decode', { payloads: [JSON.parse('['.repeat(20) + ']'.repeat(20))] })).status).toBe(400);
});
