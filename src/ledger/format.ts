/**
 * Words and numbers shared by the ledger's text and HTML views: durations, offsets from the job's
 * start, a failure in one phrase, a spec in one line, and the two ways user text is made safe to
 * show: `printable` for a terminal, `esc` for HTML. Pure.
 */
import type { JobFigures, RecordedJob } from './figures';
import { endCauseLabels, endCauses } from './figures';
import type { JobTimeline } from './timeline';
import { killedByAgent } from '../job/kill-message';

type Failure = JobTimeline['failures'][number];

/** `850ms`, `12.3s`, `4m05s`, `2h03m`, `3d04h`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const whole = Math.round(s);
  const [d, h, m, sec] = [Math.floor(whole / 86400), Math.floor(whole / 3600) % 24, Math.floor(whole / 60) % 60, whole % 60];
  if (d > 0) return `${d}d${pad(h)}h`;
  if (h > 0) return `${h}h${pad(m)}m`;
  return `${m}m${pad(sec)}s`;
}

/** Time since the job started: `+12.3s`, `+4m05.2s`, `+2h03m05s`. */
export function formatOffset(ms: number): string {
  const sign = ms < 0 ? '-' : '+';
  const a = Math.abs(ms) / 1000;
  if (a < 60) return `${sign}${a.toFixed(1)}s`;
  if (a < 3600) {
    const tenths = Math.floor(a * 10) % 600;
    return `${sign}${Math.floor(a / 60)}m${pad(Math.floor(tenths / 10))}.${tenths % 10}s`;
  }
  const whole = Math.floor(a);
  return `${sign}${Math.floor(whole / 3600)}h${pad(Math.floor(whole / 60) % 60)}m${pad(whole % 60)}s`;
}

/**
 * The job's state as the ledger can vouch for it. The `jobs` row holds the state the job started
 * in until it ends (derive.ts writes it then), so a job not ended shows what its rounds say.
 */
export function stateLabel(t: RecordedJob): string {
  if (t.job.endedAt !== null) return t.job.state;
  const open = t.rounds.find((r) => r.endedAt === null);
  return open ? `not ended · round ${open.round} running` : 'not ended';
}

/** A ratio as a percentage with one decimal: `83.4%`; `-` when unknown. */
export function formatPercent(ratio: number | null): string {
  return ratio === null ? '-' : `${(ratio * 100).toFixed(1)}%`;
}

/**
 * A failure in the words it has, never a placeholder for a field it lacks:
 * `node b rank 3 exit 1: boom`, `node b rank 0 killed by SIGKILL`, `node b lost: heartbeat timeout`.
 */
export function describeFailure(f: Pick<Failure, 'nodeId' | 'rank' | 'exitCode' | 'signal' | 'message'>): string {
  const lost = /^node lost\b:?\s*/i;
  if (f.rank === null && f.exitCode === null && f.signal === null && (f.message === null || lost.test(f.message))) {
    const why = f.message?.replace(lost, '') ?? '';
    return `node ${f.nodeId} lost${why ? `: ${why}` : ''}`;
  }
  const where = [`node ${f.nodeId}`, f.rank !== null ? `rank ${f.rank}` : null];
  // The agent's watchdog sent the signal, and its message says why (src/job/kill-message.ts).
  const how = killedByAgent(f.message) ? null : f.signal ? `killed by ${f.signal}` : f.exitCode !== null ? `exit ${f.exitCode}` : null;
  const head = [...where, how].filter(Boolean).join(' ');
  return f.message ? `${head}: ${f.message}` : head;
}

/** `train.py --lr 3e-4 · nnodes 1:4 · nproc-per-node 2 · max-restarts 3`, from whatever the spec holds. */
export function describeSpec(spec: Record<string, unknown>): string {
  const entry = (spec.entrypoint ?? {}) as Record<string, unknown>;
  const script = typeof entry.script === 'string' ? entry.script : typeof spec.script === 'string' ? spec.script : null;
  const args = Array.isArray(entry.args) ? entry.args.filter((a): a is string => typeof a === 'string') : [];
  const command = script === null ? null : [entry.module === true ? `-m ${script}` : script, ...args.map(quoteArg)].join(' ');
  const { minNodes, maxNodes, nprocPerNode, maxRestarts } = spec;
  const nnodes = typeof minNodes === 'number' && typeof maxNodes === 'number' ? (minNodes === maxNodes ? `${minNodes}` : `${minNodes}:${maxNodes}`) : null;
  return [
    command,
    nnodes && `nnodes ${nnodes}`,
    typeof nprocPerNode === 'number' && `nproc-per-node ${nprocPerNode}`,
    typeof maxRestarts === 'number' && `max-restarts ${maxRestarts}`,
  ].filter(Boolean).join(' · ') || '(no spec)';
}

/** Restarts by cause in words: `1 worker failure, 1 membership change`; empty when none. */
export function describeCauses(f: JobFigures): string {
  return endCauses.filter((c) => f.restartsByCause[c]).map((c) => `${f.restartsByCause[c]} ${endCauseLabels[c]}`).join(', ');
}

/** `2 (1 worker failure, 1 membership change)`. */
export function describeRestarts(f: JobFigures): string {
  const causes = describeCauses(f);
  return causes ? `${f.restarts} (${causes})` : `${f.restarts}`;
}

/** The figures as the lines `telastic report` prints. */
export function figureLines(f: JobFigures): string[] {
  return [
    `goodput         ${formatPercent(f.goodput)}${f.running ? ' (so far: the job is still running)' : ''}`,
    `wall time       ${formatDuration(f.wallMs)}`,
    `productive time ${formatDuration(f.productiveMs)}`,
    `restarts        ${describeRestarts(f)}`,
    `MTTR            ${f.mttrMs === null ? '-' : `${formatDuration(f.mttrMs)} (mean of ${f.recoveries} recover${f.recoveries === 1 ? 'y' : 'ies'})`}`,
  ];
}

/** User text made safe for a terminal: control characters shown as `\xNN`, bidi controls as `\uNNNN`. */
export { printable } from '../printable';

/** Text for HTML content and attribute values alike. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function quoteArg(a: string): string {
  return a === '' || /[\s'"\\$`<>()|&;*?!#~{}[\]]/.test(a) ? JSON.stringify(a) : a;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}
