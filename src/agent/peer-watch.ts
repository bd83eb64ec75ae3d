/**
 * The agent's side of peer watch (src/job/peer-watch.ts has the design and the decisions). One
 * listener per agent, alive as long as the agent (its port goes out in every `prepare`), so a
 * refused connection means the agent is gone. Protocol, one JSON object per line:
 *   watcher → peer   {"hello":{"jobId":…,"round":…,"nodeId":…}}
 *   peer → watcher   {"watching":true}   the peer's agent holds the connection for that round
 *   peer → watcher   {"bye":true}        its round ended normally (at once for an ended round); it closes
 * A close without a bye, after `watching`, that the watcher did not cause is the peer's agent
 * gone. Before `watching` nothing is blamed: a refused or failed connection, or one to a process
 * that is not a peer agent (a port taken over, an address that does not reach the listener), is
 * logged and the node is left to the heartbeat timeout, so a misconfiguration cannot drop a
 * healthy node every round.
 */
import net from 'node:net';
import { z } from 'zod';
import { idSchema } from '../job/spec';
import { peerGone, type WatchTarget } from '../job/peer-watch';
import type { Logger } from '../log';

const helloSchema = z.object({ hello: z.object({ jobId: idSchema, round: z.number().int().nonnegative(), nodeId: idSchema }) });
const byeSchema = z.object({ bye: z.literal(true) });
const watchingSchema = z.object({ watching: z.literal(true) });
/** A hello is far shorter; more without a newline is not a watcher. */
const MAX_LINE = 4096;
const BYE = `${JSON.stringify({ bye: true })}\n`;
const WATCHING = `${JSON.stringify({ watching: true })}\n`;
/** Lines a watcher reads from its peer: `watching`, then `bye`. */
const PEER_LINES = 2;

export interface PeerLost {
  peer: string;
  error: string | null;
}

export interface Watching {
  /** Settles when the peer's agent is gone; never when the round ends normally. */
  lost: Promise<PeerLost>;
  /** The watcher's round ended: close without blame. */
  close(): void;
}

export interface PeerWatch {
  /** The listener's port (listening from the first call on). */
  port(): Promise<number>;
  /** Watch `target` for this round. */
  watch(me: { jobId: string; round: number; nodeId: string }, target: WatchTarget): Watching;
  /** This node's round ended normally: say bye to its watchers, and to any that come later. */
  endRound(jobId: string, round: number): void;
  /** A round at least `round` is forming: rounds before it are over. */
  roundForming(jobId: string, round: number): void;
  /** Say bye to every watcher (the agent stops its workers or exits). */
  endAll(): void;
  close(): Promise<void>;
}

/** The first `max` lines of what `sock` sends, each to `onLine`; a line longer than MAX_LINE ends it. */
function lines(sock: net.Socket, max: number, onLine: (line: string) => void): void {
  let buf = '';
  let seen = 0;
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    if (seen >= max) return;
    buf += chunk;
    let nl;
    while (seen < max && (nl = buf.indexOf('\n')) >= 0) {
      seen++;
      onLine(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    if (seen < max && buf.length > MAX_LINE) sock.destroy();
  });
}

function parse<T>(schema: z.ZodType<T>, line: string): T | null {
  try {
    const r = schema.safeParse(JSON.parse(line));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

export function createPeerWatch(o: { bindAddress: string; nodeId: string; log: Logger }): PeerWatch {
  // Watchers connected to this agent, by `${jobId}/${round}`.
  const inbound = new Map<string, { jobId: string; round: number; socks: Set<net.Socket> }>();
  // The newest round each job formed here, and the rounds that ended here.
  const forming = new Map<string, number>();
  const ended = new Set<string>();
  let server: Promise<{ srv: net.Server; port: number }> | null = null;

  const key = (jobId: string, round: number) => `${jobId}/${round}`;
  const over = (jobId: string, round: number) => ended.has(key(jobId, round)) || round < (forming.get(jobId) ?? 0);
  const bye = (sock: net.Socket) => void sock.end(BYE);

  function accept(sock: net.Socket): void {
    sock.on('error', () => undefined); // a watcher gone is its own agent's business
    sock.setNoDelay(true);
    lines(sock, 1, (line) => {
      const h = parse(helloSchema, line)?.hello;
      if (!h) return void sock.destroy();
      if (over(h.jobId, h.round)) return bye(sock);
      sock.write(WATCHING);
      const k = key(h.jobId, h.round);
      const entry = inbound.get(k) ?? { jobId: h.jobId, round: h.round, socks: new Set<net.Socket>() };
      inbound.set(k, entry);
      entry.socks.add(sock);
      sock.on('close', () => entry.socks.delete(sock));
    });
  }

  function listen(): Promise<{ srv: net.Server; port: number }> {
    server ??= new Promise((resolve, reject) => {
      const srv = net.createServer(accept);
      srv.once('error', reject);
      srv.listen({ port: 0, host: o.bindAddress }, () => {
        const addr = srv.address();
        srv.unref(); // never what keeps an agent alive
        resolve({ srv, port: typeof addr === 'object' && addr ? addr.port : 0 });
      });
    });
    return server;
  }

  function endWhere(pred: (e: { jobId: string; round: number }) => boolean): void {
    for (const [k, e] of inbound) {
      if (!pred(e)) continue;
      for (const s of e.socks) bye(s);
      inbound.delete(k);
    }
  }

  function watch(me: { jobId: string; round: number; nodeId: string }, target: WatchTarget): Watching {
    let closedByUs = false;
    let saidBye = false;
    let armed = false;
    let error: string | null = null;
    let settle: (l: PeerLost) => void = () => undefined;
    const lost = new Promise<PeerLost>((resolve) => (settle = resolve));
    const sock = net.connect({ host: target.addr, port: target.port });
    sock.setNoDelay(true);
    sock.on('connect', () => sock.write(`${JSON.stringify({ hello: me })}\n`));
    lines(sock, PEER_LINES, (line) => {
      if (parse(byeSchema, line)) saidBye = true;
      else if (parse(watchingSchema, line)) armed = true;
    });
    sock.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    sock.on('close', () => {
      if (!armed && !closedByUs && !saidBye) o.log.warn({ round: me.round, peer: target.nodeId, addr: target.addr, port: target.port, error }, 'peer watch: no watch of the peer (it never answered as a peer agent): it is noticed lost by heartbeats only');
      if (!peerGone({ armed, bye: saidBye, closedByUs, error })) return;
      o.log.warn({ round: me.round, peer: target.nodeId, error }, 'peer watch: the peer\'s agent connection closed');
      settle({ peer: target.nodeId, error });
    });
    return {
      lost,
      close: () => {
        closedByUs = true;
        sock.destroy();
      },
    };
  }

  return {
    port: async () => (await listen()).port,
    watch,
    endRound(jobId, round) {
      const k = key(jobId, round);
      ended.add(k);
      if (ended.size > 64) ended.delete(ended.values().next().value as string);
      endWhere((e) => e.jobId === jobId && e.round === round);
    },
    roundForming(jobId, round) {
      if (round > (forming.get(jobId) ?? 0)) forming.set(jobId, round);
      endWhere((e) => e.jobId === jobId && e.round < round);
    },
    endAll: () => endWhere(() => true),
    async close() {
      endWhere(() => true);
      if (!server) return;
      const { srv } = await server;
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}
