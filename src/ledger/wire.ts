/**
 * Serves one PGlite over the PostgreSQL wire protocol on a unix socket, so that node-postgres, the
 * project's one driver, reaches the embedded ledger as it reaches any PostgreSQL. pglite-socket's
 * PGLiteSocketHandler frames each connection's messages; our SessionQueue (session-queue.ts)
 * decides whose turn it is, since pglite-socket's own server interleaves the messages of
 * concurrent connections.
 *
 * A unix socket rather than loopback TCP: PGlite checks no password, and the socket's directory
 * permissions let in exactly whoever may read the ledger's files anyway, where a TCP port would
 * let in every local user and container; there is no port to pick or collide on either.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import { SessionQueue } from './session-queue';

/** What node-postgres connects to for host `dir` and the default port. */
export const SOCKET_NAME = '.s.PGSQL.5432';
/** sun_path holds 108 bytes on Linux and 104 on macOS, with the NUL. */
const MAX_SOCKET_PATH = 103;

export interface WireServer {
  /** Stops listening and closes every connection (their transactions are rolled back). */
  close(): Promise<void>;
}

/** Listens on `socketPath`, replacing a socket file a crashed server left: the caller holds the directory's lock. */
export async function serveWire(db: PGlite, socketPath: string): Promise<WireServer> {
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    throw new Error(`ledger socket path too long (over ${MAX_SOCKET_PATH} bytes): ${socketPath}; set TELASTIC_LEDGER_DIR to a shorter directory`);
  }
  const queue = new SessionQueue(db);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // The handler's options name pglite-socket's own queue class; ours has the same three methods it calls.
    const queryQueue = queue as unknown as PGLiteSocketHandlerOptions['queryQueue'];
    void new PGLiteSocketHandler({ queryQueue, closeOnDetach: true }).attach(socket);
  });
  fs.rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
