/**
 * The timer FIFO (TORCHELASTIC_TIMER_FILE) and the lines written to it. torch's FileTimerClient
 * opens it write-only and non-blocking (failing when no reader has it open), writes one line of
 * at most PIPE_BUF bytes (atomic, so writers never interleave) and closes it. The agent holds it
 * open read-write: a FIFO then always has a writer, so the last client closing is not an end of
 * file, and opening never blocks. Read through a libuv pipe: nothing blocks a thread.
 */
import { execFileSync } from 'node:child_process';
import { constants, openSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';

/** Longer than any request torch writes (PIPE_BUF, 4096): a longer line is dropped whole. */
export const MAX_LINE = 8192;

export interface TimerFifo {
  readonly path: string;
  /**
   * Receives each line (without its newline), or `null` for a line dropped as too long. Lines
   * read before a handler is set wait for it.
   */
  onLine(handler: (line: string | null) => void): void;
  /** Stops reading and removes the FIFO. Idempotent. */
  close(): void;
}

/** Creates the FIFO at `path` (mode 0600, replacing whatever is there) and starts reading it. */
export function openTimerFifo(path: string): TimerFifo {
  rmSync(path, { force: true });
  execFileSync('mkfifo', ['-m', '600', '--', path], { stdio: 'ignore' });
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
  } catch (err) {
    rmSync(path, { force: true });
    throw err;
  }
  const socket = new Socket({ fd, readable: true, writable: false });
  socket.unref(); // the agent's life is its workers', not this pipe's
  let handler: ((line: string | null) => void) | null = null;
  const early: (string | null)[] = [];
  const emit = (line: string | null) => (handler ? handler(line) : early.push(line));
  let partial = '';
  let overlong = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      if (overlong || line.length > MAX_LINE) emit(null);
      else if (line.trim() !== '') emit(line);
      overlong = false;
    }
    if (partial.length > MAX_LINE) {
      partial = '';
      overlong = true; // the rest of this line is dropped too, at its newline
    }
  });
  socket.on('error', () => undefined); // a read error ends the pipe; close() cleans up
  let closed = false;
  return {
    path,
    onLine(h) {
      handler = h;
      for (const line of early.splice(0)) h(line);
    },
    close() {
      if (closed) return;
      closed = true;
      socket.destroy(); // closes fd
      rmSync(path, { force: true });
    },
  };
}

