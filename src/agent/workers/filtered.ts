/**
 * torchrun's `--duplicate-stdout-filters` / `--duplicate-stderr-filters`: every teed line (a
 * stream that goes to its log file and to the console, see `routeStreams`) that contains any of
 * the filters is copied, with its console prefix, into one file per attempt shared by all local
 * ranks: `<attempt dir>/filtered_stdout.log` and `filtered_stderr.log` (torch's
 * `DefaultLogsSpecs.reify`). As in torch, the file exists once filters are given, even when no
 * stream is teed; an empty filter matches every line.
 */
import { createWriteStream, mkdirSync, openSync, type WriteStream } from 'fs';
import { join } from 'path';
import type { OutputOptions } from './types';

export interface FilteredFile {
  /** Copies `line` (already prefixed, without its newline) when it contains a filter. */
  offer(line: string): void;
}

export interface FilteredOutputs {
  stdout: FilteredFile | null;
  stderr: FilteredFile | null;
  close(): Promise<void>;
}

export const FILTERED_FILES = { stdout: 'filtered_stdout.log', stderr: 'filtered_stderr.log' } as const;

export function openFiltered(output: Pick<OutputOptions, 'logDir' | 'duplicateStdoutFilters' | 'duplicateStderrFilters'>): FilteredOutputs {
  const streams: WriteStream[] = [];
  const open = (filters: readonly string[] | undefined, name: string): FilteredFile | null => {
    if (!filters?.length || output.logDir === undefined) return null;
    mkdirSync(output.logDir, { recursive: true });
    const file = join(output.logDir, name);
    // Opened here so that a bad log dir fails the start, not a later write.
    const stream = createWriteStream(file, { fd: openSync(file, 'w') });
    stream.on('error', () => undefined); // a full disk must not crash the agent
    streams.push(stream);
    return { offer: (line) => void (filters.some((f) => line.includes(f)) && stream.write(`${line}\n`)) };
  };
  const stdout = open(output.duplicateStdoutFilters, FILTERED_FILES.stdout);
  const stderr = open(output.duplicateStderrFilters, FILTERED_FILES.stderr);
  return {
    stdout,
    stderr,
    close: () => Promise.all(streams.map((s) => new Promise<void>((r) => s.end(r)))).then(() => undefined),
  };
}
