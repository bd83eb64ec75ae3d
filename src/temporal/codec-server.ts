/**
 * A codec server: Temporal's remote codec protocol over plain `node:http`, so that the Web UI
 * (`--ui-codec-endpoint`, or a production Web UI's codec setting) and `temporal … --codec-endpoint`
 * show sealed payloads decoded to whoever can reach this server.
 *
 * Protocol (temporalio/samples-go codec-server/protocol.md): `POST …/encode` and `POST …/decode`
 * (only the last part of the path counts, so it can be mounted under any prefix), body and answer
 * `{"payloads":[{"metadata":{KEY: base64}, "data": base64}]}` (Payloads as proto3 JSON), the
 * caller's namespace in `X-Namespace`. The Web UI calls it from the browser, so CORS: preflights
 * and answers carry Access-Control-Allow-* only for the allowed origins (credentials included, as
 * the Web UI may send them); a request from any other browser origin is refused (403). Requests
 * without an Origin (the CLI, curl) are served.
 *
 * A payload it cannot unseal (another key) is returned as it came, so one foreign payload does
 * not hide the rest of a history. Seals bind their namespace (sealing.ts): it is `X-Namespace`'s,
 * or the codec's own when a caller sends none.
 *
 * Whoever reaches it may send anything, so each request is bounded (codec-body.ts: 4 MiB,
 * 4096 payloads, refused with 413 while it arrives), so is the number served at once (more get
 * 503 at once), and payloads are decoded one after another rather than all at once.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { HttpError, readLimitedBody } from './codec-body';

interface JSONPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** 0 picks a free port. @default 8081 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Browser origins allowed to call it (the Web UI's, e.g. `http://localhost:8233`). */
  allowOrigins?: readonly string[];
  /** A line per request that failed, for the operator. */
  onError?: (line: string) => void;
}

export interface CodecServer {
  /** `http://host:port`: what to give the Web UI as its codec endpoint. */
  readonly url: string;
  /** Allow one more browser origin (`telastic dev` learns its Web UI's port after starting this). */
  allowOrigin(origin: string): void;
  close(): Promise<void>;
}

/**
 * Requests read or decoded at once; more get 503. A browser opens at most 6 connections to a
 * server, so a few Web UI tabs fit; at 4 MiB each the server's memory stays in the hundreds of MiB.
 */
export const MAX_CONCURRENT = 16;
/** A client that sends its headers or body slower than this is cut off (408), freeing its slot. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** How long a client refused mid-body has to read the answer before its connection is dropped. */
const LINGER_MS = 2_000;
const ALLOW_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';

export function fromJSON(p: JSONPayload): Payload {
  const metadata = Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64')]));
  return { metadata, data: p.data == null ? undefined : Buffer.from(String(p.data), 'base64') };
}

export function toJSON(p: Payload): JSONPayload {
  const metadata = Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]));
  return p.data == null ? { metadata } : { metadata, data: Buffer.from(p.data).toString('base64') };
}

async function readBody(req: IncomingMessage): Promise<JSONPayload[]> {
  const raw = await readLimitedBody(req);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
  const payloads = (body as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(payloads) || payloads.some((p) => typeof p !== 'object' || p === null)) throw new HttpError(400, 'expected {"payloads": [...]}');
  return payloads as JSONPayload[];
}

/** Decode each payload on its own, in order: one the codec cannot open is returned unchanged. */
async function decodeEach(codec: PayloadCodec, payloads: Payload[], context: SerializationContext | undefined): Promise<Payload[]> {
  const out: Payload[] = [];
  for (const p of payloads) out.push((await codec.decode([p], context).catch(() => [p]))[0] ?? p);
  return out;
}

/**
 * The rest of a refused body is not read: the answer goes out, the connection is half-closed and
 * dropped LINGER_MS later. Not closed at once: closing a socket with unread data makes the kernel
 * reset the connection, and a client still sending then loses the answer it has not read yet.
 */
function leaveUnread(req: IncomingMessage, res: ServerResponse): void {
  req.pause();
  // Node reads on (and discards) a body nobody listened to; a listener, paused, stops that.
  req.on('data', () => undefined).pause();
  res.once('finish', () => {
    req.socket.end();
    setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
  });
}

export async function startCodecServer(o: CodecServerOptions): Promise<CodecServer> {
  const allowed = new Set(o.allowOrigins ?? []);
  const host = o.host ?? '127.0.0.1';
  let active = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      if (!allowed.has(origin)) throw new HttpError(403, `origin ${origin} is not allowed (--allow-origin)`);
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    const op = new URL(req.url ?? '/', 'http://codec').pathname.split('/').filter(Boolean).pop();
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', ALLOW_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      res.writeHead(204).end();
      return;
    }
    if (op !== 'encode' && op !== 'decode') throw new HttpError(404, 'not found: POST …/encode or …/decode');
    if (req.method !== 'POST') throw new HttpError(405, `${req.method} not allowed: POST …/${op}`);
    if (active >= MAX_CONCURRENT) throw new HttpError(503, `busy: ${MAX_CONCURRENT} requests already in progress`);
    active++;
    try {
      const payloads = (await readBody(req)).map(fromJSON);
      const namespace = req.headers['x-namespace'];
      const context: SerializationContext | undefined = typeof namespace === 'string' && namespace !== '' ? { type: 'workflow', namespace, workflowId: '' } : undefined;
      const out = op === 'encode' ? await o.codec.encode(payloads, context) : await decodeEach(o.codec, payloads, context);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJSON) }));
    } finally {
      active--;
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (status === 500) o.onError?.(`${req.method} ${req.url}: ${message}`);
      if (!req.readableEnded) leaveUnread(req, res);
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'text/plain', ...(status === 503 ? { 'Retry-After': '1' } : {}) });
      res.end(`${message}\n`);
    });
  });
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8081, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    allowOrigin: (origin) => void allowed.add(origin),
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
