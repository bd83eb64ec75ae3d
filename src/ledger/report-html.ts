/**
 * `telastic report JOB --html FILE`: one self-contained page (inline CSS and SVG; no script, font
 * or stylesheet from elsewhere, so it opens from a mail attachment or an air-gapped share) with
 * the job's figures, its world size over time with failures and restarts marked, and its rounds
 * and failures. Pure. Everything from the ledger is user text (ids, script args, messages) and
 * goes through `esc` (format.ts).
 */
import { worldSizeChart } from './report-chart';
import type { EndCause, JobFigures, RecordedJob } from './figures';
import { classifyEnd, endCauseLabels, sinceStart } from './figures';
import { describeCauses, describeFailure, describeSpec, esc, formatDuration, formatOffset, formatPercent, stateLabel } from './format';

export interface ReportContext {
  /** When the page was made (and the end of a job still running). */
  now: Date;
  /** Which ledger answered, e.g. `DATABASE_URL`. */
  where: string;
}

export function reportHtml(t: RecordedJob, f: JobFigures, ctx: ReportContext): string {
  const { job } = t;
  const title = `telastic · job ${job.jobId}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>job <span class="id">${esc(job.jobId)}</span> <span class="state state-${job.endedAt ? esc(job.state.replace(/[^a-z]/gi, '')) : 'running'}">${esc(stateLabel(t))}</span></h1>
  ${job.endReason ? `<p class="verdict">${esc(job.endReason)}</p>
  ` : ''}<p class="meta">${esc(`started ${job.startedAt}`)} · ${job.endedAt ? esc(`ended ${job.endedAt}`) : 'not ended'}${job.pool ? ` · pool ${esc(job.pool)}` : ''}</p>
  <p class="spec"><code>${esc(describeSpec(job.spec))}</code></p>
</header>
${figures(f)}
<section>
  <h2>World size over time</h2>
  ${worldSizeChart(t, f)}
  <p class="legend"><span class="sw sw-ws"></span>world size (workers) <span class="sw sw-fail"></span>failure <span class="sw sw-restart"></span>restart after a failure (shaded: the time to recover) <span class="sw sw-change"></span>restart after a membership change</p>
</section>
${roundsTable(t, ctx.now)}
${failuresTable(t)}
<footer>From the telastic ledger (${esc(ctx.where)}), ${esc(ctx.now.toISOString())}.</footer>
</body>
</html>
`;
}

function figures(f: JobFigures): string {
  const card = (label: string, value: string, note = '') =>
    `<div class="card"><div class="label">${esc(label)}</div><div class="value">${esc(value)}</div>${note ? `<div class="note">${esc(note)}</div>` : ''}</div>`;
  return `<section class="figures">
  ${card('goodput', formatPercent(f.goodput), f.running ? 'so far: the job is still running' : 'productive ÷ wall time')}
  ${card('wall time', formatDuration(f.wallMs), 'job start to end')}
  ${card('productive time', formatDuration(f.productiveMs), 'all of a round’s workers running')}
  ${card('restarts', String(f.restarts), describeCauses(f) || 'none')}
  ${card('MTTR', f.mttrMs === null ? '-' : formatDuration(f.mttrMs), f.recoveries ? `mean of ${f.recoveries} recover${f.recoveries === 1 ? 'y' : 'ies'} from a failure` : 'no failure was recovered from')}
</section>`;
}

function roundsTable(t: RecordedJob, now: Date): string {
  if (t.rounds.length === 0) return '<section><h2>Rounds</h2><p class="empty">No round ran.</p></section>';
  const rows = t.rounds.map((r) => {
    const cause = classifyEnd(r.endReason);
    const ran = formatDuration(Date.parse(r.endedAt ?? t.job.endedAt ?? now.toISOString()) - Date.parse(r.startedAt));
    const resumed = t.checkpoints.filter((c) => c.chosenForRound === r.round).at(-1);
    const nodes = r.members.map((m) => `<span class="member">${esc(`${m.nodeId} (${m.groupRank})`)}</span>`).join(', ');
    return `<tr>
  <td class="num">${r.round}</td>
  <td class="num">${esc(formatOffset(sinceStart(t, r.startedAt)))}</td>
  <td class="num">${r.endedAt ? esc(formatOffset(sinceStart(t, r.endedAt))) : '<em>open</em>'}</td>
  <td class="num">${esc(ran)}</td>
  <td class="num">${r.worldSize}</td>
  <td class="nodes">${nodes}</td>
  <td>${cause ? `<span class="cause cause-${cause}">${esc(endCauseLabels[cause])}</span> ` : ''}<span class="reason">${esc(reasonDetail(r.endReason, cause))}</span></td>
  <td class="path">${resumed ? esc(`${resumed.path}${resumed.step === null ? '' : ` (step ${resumed.step})`}`) : ''}</td>
</tr>`;
  });
  return `<section>
<h2>Rounds</h2>
<table>
<thead><tr><th>round</th><th>started</th><th>ended</th><th>ran</th><th>world size</th><th>nodes (group rank)</th><th>ended because</th><th>resumed from</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</section>`;
}

/** What a round's end reason adds to its cause's label: `failure: boom` → `boom`, `succeeded` → nothing. */
function reasonDetail(reason: string | null, cause: EndCause | null): string {
  if (reason === null || cause === null) return '';
  // `failure: node b lost: why` → `b: why` (and the older `failure: node lost: why` → `why`).
  const lost = (_: string, id: string | undefined) => (id ? `${id}: ` : '');
  const detail = cause === 'node-lost' ? reason.replace(/^(?:failure: )?node (?:(\S+) )?lost:?\s*/i, lost).replace(/: $/, '') : cause === 'worker-failure' ? reason.replace(/^failure: /, '') : reason;
  return detail.trim().toLowerCase() === endCauseLabels[cause] ? '' : detail;
}

function failuresTable(t: RecordedJob): string {
  if (t.failures.length === 0) return '';
  const rows = t.failures.map((f) => `<tr><td class="num">${esc(formatOffset(sinceStart(t, f.at)))}</td><td class="num">${f.round}</td><td><pre>${esc(describeFailure(f))}</pre></td></tr>`);
  return `<section>
<h2>Failures</h2>
<table>
<thead><tr><th>at</th><th>round</th><th>what</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</section>`;
}

const STYLE = `
:root { --ink: #1f2933; --muted: #64748b; --line: #e2e8f0; --accent: #2563eb; --fail: #dc2626; --change: #94a3b8; --bg: #ffffff; --panel: #f8fafc; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1080px; padding: 28px 24px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: var(--bg); }
h1 { font-size: 22px; margin: 0 0 4px; font-weight: 600; }
h1 .id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
h2 { font-size: 15px; margin: 28px 0 10px; font-weight: 600; }
.meta, .note, .empty, footer, .legend { color: var(--muted); }
.meta { margin: 0 0 6px; }
.spec { margin: 0; }
code, pre, .path, .nodes { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; }
.state { font-size: 12px; font-weight: 600; padding: 2px 8px; border-radius: 999px; vertical-align: middle; background: #e2e8f0; color: #334155; }
.state-succeeded { background: #dcfce7; color: #166534; }
.state-failed { background: #fee2e2; color: #991b1b; }
.state-running, .state-restarting, .state-rendezvous { background: #dbeafe; color: #1e40af; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 12px; margin-top: 22px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.card .label { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.card .value { font-size: 26px; font-weight: 600; margin: 2px 0; font-variant-numeric: tabular-nums; }
.card .note { font-size: 12px; }
svg.chart { width: 100%; height: auto; display: block; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
svg.chart text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: var(--muted); }
svg.chart .axis-label { font-size: 12px; fill: var(--ink); }
svg.chart .grid { stroke: var(--line); }
svg.chart .ws { fill: none; stroke: var(--accent); stroke-width: 2.5; }
svg.chart .ws-area { fill: var(--accent); opacity: .10; }
svg.chart .restart { stroke-width: 1.5; stroke-dasharray: 5 4; }
svg.chart .restart-failure { stroke: var(--fail); opacity: .55; }
svg.chart .restart-change { stroke: var(--change); }
svg.chart .gap { opacity: .10; }
svg.chart .gap-failure { fill: var(--fail); }
svg.chart .gap-change { fill: var(--change); opacity: .2; }
svg.chart .label-failure { fill: var(--fail); }
svg.chart .fail { fill: var(--fail); stroke: #fff; stroke-width: 1.5; }
svg.chart .round-label { font-size: 10px; }
.legend { font-size: 12px; margin: 8px 0 0; }
.sw { display: inline-block; width: 14px; height: 3px; margin: 0 6px 3px 14px; vertical-align: middle; }
.sw:first-child { margin-left: 0; }
.sw-ws { background: var(--accent); }
.sw-fail { width: 9px; height: 9px; border-radius: 50%; background: var(--fail); }
.sw-restart { border-top: 2px dashed var(--fail); height: 0; opacity: .7; }
.sw-change { border-top: 2px dashed var(--change); height: 0; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { white-space: nowrap; font-size: 12px; font-weight: 600; color: var(--muted); background: var(--panel); }
td.num, th.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
td .member { white-space: nowrap; }
.reason { color: var(--muted); word-break: break-word; }
.cause { font-size: 11.5px; font-weight: 600; padding: 1px 7px; border-radius: 999px; white-space: nowrap; background: #e2e8f0; color: #334155; }
.cause-worker-failure, .cause-node-lost { background: #fee2e2; color: #991b1b; }
.cause-succeeded { background: #dcfce7; color: #166534; }
footer { margin-top: 32px; font-size: 12px; }
`;
