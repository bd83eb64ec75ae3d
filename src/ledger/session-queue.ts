/**
 * Many wire-protocol connections sharing one PGlite, without mixing their sessions up.
 *
 * PGlite is a single PostgreSQL backend: one session, one unnamed statement and portal, one
 * transaction. node-postgres sends each parameterised query as five messages (Parse, Bind,
 * Describe, Execute, Sync), so connections may not take turns message by message, as
 * pglite-socket's own queue does outside explicit transactions: another connection's Parse between
 * our Parse and Bind replaces our unnamed statement. Here the connection whose message runs owns
 * the session until PGlite's answer ends with ReadyForQuery saying idle ('I'); in a transaction
 * ('T') or a failed one ('E') it keeps owning. Other connections' messages wait, in arrival order.
 *
 * A connection that goes away gives the session back: its waiting messages are dropped, and a
 * ROLLBACK and a Sync undo whatever it left half done. So a connection idle inside a transaction
 * holds every other one up (as a table lock would); session state that is not a transaction (SET,
 * named prepared statements, LISTEN) is shared by all connections.
 *
 * pglite-socket's PGLiteSocketHandler (one per connection) calls the three public methods.
 */
import type { PGlite } from '@electric-sql/pglite';

interface Waiting {
  handlerId: number;
  /** A message from the connection, or 'release': give the session back for a closed connection. */
  message: Uint8Array | 'release';
  onData(data: Uint8Array): void;
  resolve(bytes: number): void;
  reject(err: Error): void;
}

const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);
const TERMINATE = 0x58;
/** ReadyForQuery: 'Z', length 5, then the status byte. */
const READY = [0x5a, 0, 0, 0, 5];
const IDLE = 0x49;

export class SessionQueue {
  private waiting: Waiting[] = [];
  private owner: number | null = null;
  private draining = false;

  constructor(private readonly db: PGlite) {}

  /** Runs a connection's message once the session is free or already its; resolves with the bytes answered. */
  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ handlerId, message, onData, resolve, reject });
      void this.drain();
    });
  }

  /** Drops the messages of a closed connection that have not run. */
  clearQueueForHandler(handlerId: number): void {
    const dropped = this.waiting.filter((w) => w.handlerId === handlerId && w.message !== 'release');
    this.waiting = this.waiting.filter((w) => !dropped.includes(w));
    for (const w of dropped) w.reject(new Error('connection closed'));
  }

  /** Gives the session back if a closed connection owns it (after its message still running, if any). */
  clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiting.push({ handlerId, message: 'release', onData: () => undefined, resolve: () => resolve(), reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (let w = this.next(); w; w = this.next()) await this.run(w);
    } finally {
      this.draining = false;
    }
  }

  /** The owner's next message (none: wait for it), or when nobody owns the session the oldest one. */
  private next(): Waiting | undefined {
    const i = this.owner === null ? 0 : this.waiting.findIndex((w) => w.handlerId === this.owner);
    return i < 0 ? undefined : this.waiting.splice(i, 1)[0];
  }

  private async run(w: Waiting): Promise<void> {
    // A Terminate ends the session as a disconnect does (PGlite itself ignores it).
    if (w.message === 'release' || w.message[0] === TERMINATE) {
      if (this.owner === w.handlerId) await this.release().catch(() => undefined);
      w.resolve(0);
      return;
    }
    this.owner = w.handlerId;
    let bytes = 0;
    let tail: number[] = [];
    try {
      await this.exec(w.message, (data) => {
        bytes += data.length;
        tail = [...tail, ...data.subarray(-6)].slice(-6);
        w.onData(data);
      });
      // Only ReadyForQuery can end an answer with these six bytes: every other backend message
      // ends with a NUL, an int16 format code or is a bare 4-byte header.
      if (READY.every((b, i) => tail[i] === b) && tail[5] === IDLE) this.owner = null;
      w.resolve(bytes);
    } catch (err) {
      if (!this.db.isInTransaction()) this.owner = null;
      w.reject(err as Error);
    }
  }

  /**
   * Ends what the closed owner left: ROLLBACK aborts an implicit transaction of a half-sent batch
   * (a Sync would commit it) and an explicit one; a Sync then ends the batch, or the error state
   * in which the backend ignores all but Sync; a failed explicit transaction needs a second ROLLBACK.
   */
  private async release(): Promise<void> {
    try {
      await this.exec(query('ROLLBACK'));
      await this.exec(SYNC);
      if (this.db.isInTransaction()) await this.exec(query('ROLLBACK'));
    } finally {
      this.owner = null;
    }
  }

  private exec(message: Uint8Array, onRawData: (data: Uint8Array) => void = () => undefined): Promise<void> {
    return this.db.runExclusive(() => this.db.execProtocolRawStream(message, { onRawData }));
  }
}

/** A simple-protocol Query message. */
function query(sql: string): Uint8Array {
  const text = Buffer.from(`${sql}\0`);
  const message = Buffer.alloc(5 + text.length);
  message.write('Q', 0);
  message.writeInt32BE(4 + text.length, 1);
  text.copy(message, 5);
  return message;
}
