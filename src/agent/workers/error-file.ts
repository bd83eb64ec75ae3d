/**
 * The failure message of a worker: what it wrote to TORCHELASTIC_ERROR_FILE (torch's `@record`
 * writes `{"message": {"message": "...", "extraInfo": {"py_callstack": ..., "timestamp": ...}}}`,
 * other writers `{"message": "..."}`), else the last line it wrote to stderr.
 */
import { closeSync, openSync, readFileSync, readSync, fstatSync } from 'fs';

export const MAX_MESSAGE_CHARS = 500;

/** The first non-empty line of `text`, trimmed and capped at MAX_MESSAGE_CHARS; null if none. */
export function firstLine(text: string): string | null {
  const line = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '');
  return line === undefined ? null : cap(line);
}

/** The last non-empty line of `text`, trimmed and capped; null if none. */
export function lastLine(text: string): string | null {
  const lines = text.split(/[\r\n]+/).map((l) => l.trim()).filter((l) => l !== '');
  return lines.length === 0 ? null : cap(lines[lines.length - 1]!);
}

function cap(line: string): string {
  return line.length <= MAX_MESSAGE_CHARS ? line : `${line.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}

/** The first line of the error file's message; null when there is no file or it says nothing. */
export function readErrorFileMessage(path: string | undefined): string | null {
  if (!path) return null;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null; // absent, or not JSON (torch's own parser gives up too)
  }
  const m = (data as { message?: unknown } | null)?.message;
  if (typeof m === 'string') return firstLine(m);
  const inner = (m as { message?: unknown } | null | undefined)?.message;
  return typeof inner === 'string' ? firstLine(inner) : null;
}

/** The last non-empty line within the last `bytes` of a file; null when absent or empty. */
export function lastLineOfFile(path: string, bytes = 8192): string | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    const len = Math.min(size, bytes);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    return lastLine(buf.toString('utf8'));
  } finally {
    closeSync(fd);
  }
}
