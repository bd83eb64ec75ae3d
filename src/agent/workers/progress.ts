/**
 * Progress as a signal (`--progress-timeout`): each worker may write its step to the file named
 * in its TELASTIC_PROGRESS_FILE (any write counts; a number in it is shown as the step). When no
 * rank of the node has written for `timeoutMs` while its workers run, the node's workers are hung
 * (before the first write, `startTimeoutMs` counts from their start: importing torch and loading a
 * checkpoint are not progress),: `onHung` is told, with one line naming the stuck ranks, and the
 * group kills them (group.ts). Without a timeout the files are still read, for `telastic status`.
 * One scripted rank is enough (rank 0 of a DDP job stalls with the others in a collective).
 */
import { readFileSync, statSync } from 'node:fs';
import { noProgressMessage } from '../../job/kill-message';

/** What `telastic status` shows of a node: its newest report, how old, and the step it gave. */
export interface ProgressReport {
  /** ms since the newest write to any rank's progress file (null: none yet). */
  ageMs: number | null;
  step: number | null;
  /** ms since the workers started. */
  runningMs: number;
}

export interface ProgressOptions {
  files: { rank: number; file: string }[];
  startedAt: number;
  timeoutMs?: number;
  /** Before the first report (`--progress-start-timeout`). @default timeoutMs */
  startTimeoutMs?: number;
  onHung: (message: string) => void;
  /** @default a fifth of the timeout, between 100 ms and 1 s */
  intervalMs?: number;
  /** @default Date.now */
  now?: () => number;
}

export interface ProgressWatch {
  report(): ProgressReport;
  stop(): void;
}

/** The newest write to a progress file and the step in it; null before the first write. */
function readOne(file: string): { at: number; step: number | null } | null {
  try {
    const at = statSync(file).mtimeMs;
    const text = readFileSync(file, 'utf8').slice(0, 64).trim();
    const step = /^\d{1,15}$/.test(text) ? Number(text) : null;
    return { at, step };
  } catch {
    return null;
  }
}

export function watchProgress(o: ProgressOptions): ProgressWatch {
  const now = o.now ?? Date.now;
  let newest: { at: number; step: number | null } | null = null;
  let stopped = false;
  const read = () => {
    for (const { file } of o.files) {
      const r = readOne(file);
      // A write from before this round's start (a file left behind) is not this round's progress.
      if (r && r.at >= o.startedAt - 1000 && (!newest || r.at > newest.at)) newest = r;
    }
  };
  const report = (): ProgressReport => {
    if (!stopped) read();
    const t = now();
    return { ageMs: newest ? Math.max(0, t - newest.at) : null, step: newest?.step ?? null, runningMs: t - o.startedAt };
  };
  let timer: NodeJS.Timeout | null = null;
  if (o.timeoutMs !== undefined) {
    const timeoutMs = o.timeoutMs;
    const every = o.intervalMs ?? Math.min(1000, Math.max(100, Math.floor(Math.min(timeoutMs, o.startTimeoutMs ?? timeoutMs) / 5)));
    timer = setInterval(() => {
      if (stopped) return;
      const r = report();
      const starting = r.ageMs === null && o.startTimeoutMs !== undefined;
      const limitMs = starting ? o.startTimeoutMs! : timeoutMs;
      if ((r.ageMs ?? r.runningMs) < limitMs) return;
      stop();
      o.onHung(noProgressMessage(o.files.map((f) => f.rank), limitMs, r, starting ? '--progress-start-timeout' : '--progress-timeout'));
    }, every);
    timer.unref();
  }
  const stop = () => {
    if (!stopped) read(); // the last report stays for whoever asks after the workers ended
    stopped = true;
    if (timer) clearInterval(timer);
  };
  return { report, stop };
}
