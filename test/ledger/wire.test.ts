/**
 * Many connections on one PGlite served over the wire (wire.ts, session-queue.ts), through real
 * sockets and node-postgres. The network may cut a client's messages anywhere (chopProxy cuts
 * every write in two), so the server sees other connections' messages in between.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
import { serveWire, SOCKET_NAME, type WireServer } from '../../src/ledger/wire';
import { chopProxy } from './chop-proxy';

let db: PGlite;
let dir: string;
let server: WireServer;
const clients: pg.Client[] = [];

beforeAll(async () => {
  db = await PGlite.create();
  await db.exec('CREATE TABLE t (n integer)');
  dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-wire-'));
  server = await serveWire(db, path.join(dir, SOCKET_NAME));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
  await db.exec('TRUNCATE t');
});

afterAll(async () => {
  await server?.close();
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function client(config: pg.ClientConfig = { host: dir }): Promise<pg.Client> {
  const c = new pg.Client({ user: 'postgres', database: 'postgres', ...config });
  c.on('error', () => undefined);
  clients.push(c);
  await c.connect();
  return c;
}

/** Two connections, 200 parameterised queries each with 1 and 3 parameters at once; what went wrong. */
async function queryAtOnce(config: pg.ClientConfig): Promise<string[]> {
  const [a, b] = [await client(config), await client(config)];
  const errors: string[] = [];
  const check = (who: string, i: number, want: unknown) => (r: pg.QueryResult | Error) => {
    if (r instanceof Error) errors.push(`${who}@${i}: ${r.message}`);
    else if (r.rows[0]?.v !== want) errors.push(`${who}@${i}: got ${JSON.stringify(r.rows)}`);
  };
  await Promise.all([
    (async () => {
      for (let i = 0; i < 200; i++) await a.query('SELECT $1::int + 1 AS v', [i]).then(check('a', i, i + 1), check('a', i, i + 1));
    })(),
    (async () => {
      for (let i = 0; i < 200; i++) await b.query('SELECT $1::text || $2::text || $3::text AS v', ['x', i, 'y']).then(check('b', i, `x${i}y`), check('b', i, `x${i}y`));
    })(),
  ]);
  return errors;
}

test('two connections querying at once each get their own answers, however the network cuts their messages', async () => {
  const proxy = await chopProxy({ path: path.join(dir, SOCKET_NAME) });
  try {
    expect(await queryAtOnce({ host: '127.0.0.1', port: proxy.port })).toEqual([]);
  } finally {
    await proxy.close();
  }
});

test('a connection in a transaction holds the others off until it commits', async () => {
  const [a, b] = [await client(), await client()];
  await a.query('BEGIN');
  await a.query('INSERT INTO t VALUES ($1)', [1]);
  let counted: number | null = null;
  const reading = b.query('SELECT count(*)::int AS n FROM t').then((r) => (counted = r.rows[0].n));
  for (let i = 0; i < 20; i++) await a.query('SELECT $1::int', [i]); // b had every chance to run meanwhile
  expect(counted).toBeNull();
  await a.query('COMMIT');
  await reading;
  expect(counted).toBe(1);
});

test('a connection that goes away inside a transaction leaves nothing behind, and the others go on', async () => {
  const [a, b] = [await client(), await client()];
  await a.query('BEGIN');
  await a.query('INSERT INTO t VALUES ($1)', [1]);
  (a as unknown as { connection: { stream: net.Socket } }).connection.stream.destroy();
  expect((await b.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }]);
  await b.query('INSERT INTO t VALUES ($1)', [2]); // b is not stuck in a's transaction either
  expect((await b.query('SELECT n FROM t')).rows).toEqual([{ n: 2 }]);
});

test('a connection that goes away after Execute but before Sync has its statement rolled back, not committed', async () => {
  const socket = net.connect(path.join(dir, SOCKET_NAME));
  try {
    const answers = backendMessages(socket);
    socket.write(startup());
    await answers.until('Z');
    // Parse "INSERT …", Bind, Execute: PostgreSQL runs it in an implicit transaction that only Sync commits.
    socket.write(Buffer.concat([message('P', '\0INSERT INTO t VALUES (7)\0', [0, 0]), message('B', '', [0, 0, 0, 0, 0, 0, 0, 0]), message('E', '', [0, 0, 0, 0, 0])]));
    await answers.until('C');
  } finally {
    socket.destroy();
  }
  const b = await client();
  expect((await b.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }]);
});

// Last: it leaves the shared PGlite as the stock server's clients left it.
test("pglite-socket's own server mixes concurrent connections' statements up (why wire.ts has its own queue)", async () => {
  const stock = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 10 });
  await stock.start();
  const proxy = await chopProxy({ host: '127.0.0.1', port: Number(stock.getServerConn().split(':').pop()) });
  try {
    const errors = await queryAtOnce({ host: '127.0.0.1', port: proxy.port });
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatch(/bind message supplies \d parameters, but prepared statement "" requires \d/);
  } finally {
    await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
    await proxy.close();
    await stock.stop();
  }
});

function message(type: string, text: string, bytes: number[]): Buffer {
  const body = Buffer.concat([Buffer.from(text), Buffer.from(bytes)]);
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), length, body]);
}

function startup(): Buffer {
  const body = Buffer.from('\0\x03\0\0user\0postgres\0database\0postgres\0\0');
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([length, body]);
}

/** The types of the backend messages `socket` receives; `until(type)` waits for the next one of `type`. */
function backendMessages(socket: net.Socket): { until(type: string): Promise<void> } {
  let buffered = Buffer.alloc(0);
  const types: string[] = [];
  let wake = () => undefined as void;
  socket.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 5 && buffered.length >= 1 + buffered.readInt32BE(1)) {
      types.push(String.fromCharCode(buffered[0]!));
      buffered = buffered.subarray(1 + buffered.readInt32BE(1));
    }
    wake();
  });
  return {
    until: (type) =>
      new Promise((resolve, reject) => {
        socket.once('error', reject);
        wake = () => {
          const i = types.indexOf(type);
          if (i >= 0) {
            types.splice(0, i + 1);
            resolve();
          }
        };
        wake();
      }),
  };
}
