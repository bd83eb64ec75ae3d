/**
 * Finding 5 of the audit: one oversized request to the codec server. A real `telastic
 * codec-server` process with a key, over real HTTP on 127.0.0.1: a 12 MB body (4,000,000
 * entries) and a 1,000,000-entry body (3 MB) each get 413 at once, requests beyond the server's
 * concurrency get 503 at once, and all the while another client's small decode is answered.
 *
 * Bounded so that it fails fast on a server without the limits: the server runs with a 512 MiB
 * heap and is SIGKILLed past 1 GiB of RSS, every request gives up after 5 s.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { MAX_CONCURRENT, fromJSON, toJSON } from '../../../src/temporal/codec-server';
import { freePort } from '../../../src/temporal/ports';
import { SealingCodec, keyId } from '../../../src/temporal/sealing';
import { startTelastic, stopAll, tmpDir, waitFor, type Agent } from '../harness';

const GIVE_UP_MS = 5_000;
/** A bound that a stalled server misses by far; the measured figures are printed. */
const STALL_MS = 2_000;
const RSS_KILL_BYTES = 1024 ** 3;

const dir = tmpDir('hostile-codec');
const key = randomBytes(32);
const codec = new SealingCodec([{ id: keyId(key), key, source: 'test' }]);
let server: Agent;
let url: string;
let peakRss = 0;
let watchdog: NodeJS.Timeout;

beforeAll(async () => {
  const keyFile = path.join(dir, 'job.key');
  writeFileSync(keyFile, key.toString('base64'), { mode: 0o600 });
  const port = await freePort();
  server = startTelastic('hostile-codec', ['codec-server', '--port', String(port), '--encryption-key-file', keyFile], { NODE_OPTIONS: '--max-old-space-size=512' });
  await waitFor('the codec server', () => /^Codec server: /m.test(server.output()), 30_000, 50);
  url = `http://127.0.0.1:${port}`;
  const pid = server.proc.pid as number;
  watchdog = setInterval(() => {
    const rss = rssOf(pid);
    peakRss = Math.max(peakRss, rss);
    if (rss > RSS_KILL_BYTES) server.proc.kill('SIGKILL');
  }, 20);
  // The figures below are the server's, not this process's first fetch (undici loads lazily).
  expect((await smallDecode()).status).toBe(200);
});
afterAll(async () => {
  clearInterval(watchdog);
  process.stdout.write(`codec server peak RSS: ${(peakRss / 1024 ** 2).toFixed(0)} MiB\n`);
  await stopAll([server]);
  rmSync(dir, { recursive: true, force: true });
});

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** `{"payloads":[{},{},…]}` with `n` entries: the audit's bodies. */
function emptyPayloads(n: number): Buffer {
  return Buffer.from(`{"payloads":[${'{},'.repeat(n - 1)}{}]}`);
}

interface Answer { status: number | null; ms: number; error?: string }

/**
 * POSTs `body` to /decode in 64 KiB writes (with Content-Length, or chunked without it) and
 * resolves with the status as soon as one arrives, without sending the rest; after GIVE_UP_MS
 * it gives up (status null).
 */
function sendBig(body: Buffer, withLength: boolean): Promise<Answer> {
  const started = Date.now();
  return new Promise<Answer>((resolve) => {
    let done = false;
    const finish = (a: Omit<Answer, 'ms'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...a, ms: Date.now() - started });
      req.destroy();
    };
    const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'application/json', ...(withLength ? { 'Content-Length': body.length } : {}) };
    const req = http.request(`${url}/decode`, { method: 'POST', headers });
    const timer = setTimeout(() => finish({ status: null, error: `no answer in ${GIVE_UP_MS} ms` }), GIVE_UP_MS);
    req.on('response', (res) => {
      res.resume();
      finish({ status: res.statusCode ?? null });
    });
    req.on('error', (err) => finish({ status: null, error: err.message }));
    const closed = once(req, 'close');
    void (async () => {
      for (let at = 0; at < body.length && !done; at += 64 * 1024) {
        if (!req.write(body.subarray(at, at + 64 * 1024))) await Promise.race([new Promise((r) => req.once('drain', r)), closed]);
      }
      if (!done) req.end();
    })().catch(() => undefined);
  });
}

const spec = defaultPayloadConverter.toPayload({ script: 'train.py', note: 'small' }) as Payload;

/** A small decode from another client: the answer's status and how long it took. */
async function smallDecode(): Promise<Answer> {
  const [sealed] = await codec.encode([spec]);
  const started = Date.now();
  try {
    const res = await fetch(`${url}/decode`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ payloads: [toJSON(sealed)] }), signal: AbortSignal.timeout(GIVE_UP_MS),
    });
    const ms = Date.now() - started;
    if (res.status !== 200) return { status: res.status, ms };
    const { payloads } = (await res.json()) as { payloads: Parameters<typeof fromJSON>[0][] };
    const decoded = defaultPayloadConverter.fromPayload(fromJSON(payloads[0]));
    return { status: JSON.stringify(decoded) === JSON.stringify({ script: 'train.py', note: 'small' }) ? 200 : -1, ms };
  } catch (err) {
    return { status: null, ms: Date.now() - started, error: (err as Error).message };
  }
}

/** Small decodes back to back while `attack` runs, and one after it: every answer. */
async function probeDuring(attack: Promise<Answer>): Promise<Answer[]> {
  let over = false;
  void attack.finally(() => (over = true));
  const answers: Answer[] = [];
  do answers.push(await smallDecode());
  while (!over && answers.length < 50);
  answers.push(await smallDecode());
  return answers;
}

async function attack(name: string, body: Buffer, withLength: boolean): Promise<void> {
  const big = sendBig(body, withLength);
  const probes = await probeDuring(big);
  const answer = await big;
  const worst = Math.max(...probes.map((p) => p.ms));
  process.stdout.write(`${name}: ${answer.status ?? answer.error} after ${answer.ms} ms; ${probes.length} small decodes meanwhile, slowest ${worst} ms (statuses ${[...new Set(probes.map((p) => p.status ?? p.error))].join(', ')})\n`);
  expect({ status: answer.status, fast: answer.ms < STALL_MS }).toEqual({ status: 413, fast: true });
  expect(probes.map((p) => p.status ?? p.error)).toEqual(probes.map(() => 200));
  expect(worst).toBeLessThan(STALL_MS);
}

test('a 12 MB body (4,000,000 entries) with its Content-Length gets 413 at once; others are answered meanwhile', async () => {
  await attack('12 MB, Content-Length', emptyPayloads(4_000_000), true);
}, 30_000);

test('a 12 MB body sent chunked (no Content-Length) gets 413 at once; others are answered meanwhile', async () => {
  await attack('12 MB, chunked', emptyPayloads(4_000_000), false);
}, 30_000);

test('a 1,000,000-entry body (3 MB, under the byte limit) gets 413 at once; others are answered meanwhile', async () => {
  await attack('1,000,000 entries, chunked', emptyPayloads(1_000_000), false);
}, 30_000);

test('requests beyond the concurrency limit get 503 at once, and the server answers again once they are gone', async () => {
  // 64 clients that start a body and never finish it.
  const holders: http.ClientRequest[] = [];
  const statuses: Array<Promise<number | null>> = [];
  for (let i = 0; i < 64; i++) {
    const req = http.request(`${url}/decode`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': 1000 } });
    statuses.push(new Promise((resolve) => {
      req.on('response', (res) => { res.resume(); resolve(res.statusCode ?? null); });
      req.on('error', () => resolve(null));
    }));
    req.write('{"payloads":[');
    holders.push(req);
  }
  try {
    const settled = () => Promise.all(statuses.map((s) => Promise.race([s, new Promise<'open'>((r) => setImmediate(() => r('open')))])));
    const refusedAt = Date.now();
    await waitFor('503s', async () => (await settled()).filter((s) => s === 503).length >= 64 - MAX_CONCURRENT, 3_000, 20);
    const ms = Date.now() - refusedAt;
    const during = await smallDecode();
    const now = await settled();
    process.stdout.write(`64 unfinished requests: ${now.filter((s) => s === 503).length} refused with 503 within ${ms} ms, ${now.filter((s) => s === 'open').length} still open; a small decode meanwhile: ${during.status ?? during.error} in ${during.ms} ms\n`);
    expect(now.filter((s) => s === 'open').length).toBe(MAX_CONCURRENT);
    expect({ status: during.status, fast: during.ms < STALL_MS }).toEqual({ status: 503, fast: true });
  } finally {
    holders.forEach((r) => r.destroy());
  }
  const after = await waitFor('a decode once the holders left', async () => {
    const a = await smallDecode();
    return a.status === 200 ? a : null;
  }, 5_000, 20);
  expect(after.ms).toBeLessThan(STALL_MS);
}, 30_000);
