/**
 * One worker's stdout and stderr, routed as `routeStreams` decides. A stream that goes to its file
 * only is handed to the process as that file (as torch does), so nothing passes through the
 * agent; a stream that reaches the console is piped, split into lines, prefixed `[rank<n>]:` and
 * written to the file as well when teed. stderr is always captured or kept in a file, so a failure
 * without an error file can still be told by its last line.
 */
import type { ChildProcess, StdioNull, StdioPipe } from 'child_process';
import { closeSync, createWriteStream, mkdirSync, openSync, type WriteStream } from 'fs';
import type { Readable } from 'stream';
import { lastLine, lastLineOfFile } from './error-file';
import type { FilteredFile } from './filtered';
import { workerLogPaths } from './layout';
import { routeStreams, type StreamRoute } from './std';
import type { OutputOptions, WorkerSpec } from './types';

type Stdio = StdioNull | StdioPipe | number;

export interface WorkerOutput {
  /** stdio for `spawn`: stdin is /dev/null (a worker in a background group must not read the tty). */
  readonly stdio: [StdioNull, Stdio, Stdio];
  /** Starts copying the piped streams; call right after spawn. Closes fds handed to the child. */
  attach(child: ChildProcess): void;
  /** The last non-empty line the worker wrote to stderr, if known. */
  lastStderrLine(): string | null;
  /** Waits (at most `timeoutMs`) for the pipes to drain, then closes the files. */
  close(timeoutMs: number): Promise<void>;
}

interface Stream {
  stdio: Stdio;
  route: StreamRoute;
  fd: number | null;
  file: WriteStream | null;
}

function open(route: StreamRoute, keepPiped: boolean): Stream {
  if (route.file !== null && !route.console) {
    return { stdio: openSync(route.file, 'w'), route, fd: null, file: null };
  }
  const piped = route.console || keepPiped;
  // Opened here so that a bad log dir fails the start, not a later write.
  const file = route.file === null ? null : createWriteStream(route.file, { fd: openSync(route.file, 'w') });
  file?.on('error', () => undefined); // a full disk must not crash the agent; the console still gets it
  return { stdio: piped ? 'pipe' : 'ignore', route, fd: null, file };
}

/** `filtered`: the attempt's --duplicate-*-filters files (filtered.ts), fed the teed lines. */
export function prepareOutput(w: WorkerSpec, output: OutputOptions, filtered?: { stdout: FilteredFile | null; stderr: FilteredFile | null }): WorkerOutput {
  const paths = workerLogPaths(output.logDir ?? '', w.localRank);
  const routes = routeStreams(output, w.localRank, paths);
  if (routes.stdout.file !== null || routes.stderr.file !== null) mkdirSync(paths.dir, { recursive: true });
  const out = open(routes.stdout, false);
  const err = open(routes.stderr, true);
  for (const s of [out, err]) if (typeof s.stdio === 'number') s.fd = s.stdio;

  const consoleOut = output.console ?? { stdout: process.stdout, stderr: process.stderr };
  const prefix = `[rank${w.rank}]:`;
  let errTail: string | null = null;
  const ended: Promise<void>[] = [];

  const pump = (src: Readable | null, s: Stream, dest: NodeJS.WritableStream, dup: FilteredFile | null | undefined, onLine?: (l: string) => void) => {
    if (src === null) return;
    let partial = '';
    // torch tails only teed streams into the filtered files: in a file and on the console.
    const teed = s.route.file !== null && s.route.console ? dup : null;
    const emit = (line: string) => {
      onLine?.(line);
      if (s.route.console) dest.write(`${prefix}${line}\n`);
      teed?.offer(`${prefix}${line}`);
    };
    src.setEncoding('utf8');
    src.on('data', (chunk: string) => {
      s.file?.write(chunk);
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) emit(line);
    });
    ended.push(
      new Promise<void>((resolve) => {
        src.once('close', () => {
          if (partial !== '') emit(partial);
          partial = '';
          resolve();
        });
      }),
    );
  };

  return {
    stdio: ['ignore', out.stdio, err.stdio],
    attach(child) {
      for (const s of [out, err]) {
        if (s.fd !== null) closeSync(s.fd);
        s.fd = null;
      }
      pump(child.stdout, out, consoleOut.stdout, filtered?.stdout);
      pump(child.stderr, err, consoleOut.stderr, filtered?.stderr, (line) => {
        errTail = lastLine(line) ?? errTail;
      });
    },
    lastStderrLine() {
      if (err.route.file !== null && !err.route.console) return lastLineOfFile(err.route.file);
      return errTail;
    },
    async close(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)));
      await Promise.race([Promise.all(ended), timeout]);
      clearTimeout(timer);
      for (const s of [out, err]) {
        if (s.fd !== null) closeSync(s.fd);
        s.fd = null;
      }
      await Promise.all(
        [out.file, err.file].map((f) => (f === null ? undefined : new Promise<void>((r) => f.end(r)))),
      );
    },
  };
}
