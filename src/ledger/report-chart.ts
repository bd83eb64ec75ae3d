/**
 * The report's chart, as inline SVG: world size over time as a step line, a dashed vertical line
 * where each round after the first started and a band over the time before it when no round ran
 * (red after a failure or a lost node, grey after a membership change), a red dot at each failure,
 * both axes labelled. Pure; user text goes through
 * `esc`, and only into <title> tooltips.
 */
import type { EndCause, JobFigures, RecordedJob } from './figures';
import { classifyEnd, sinceStart } from './figures';
import { describeFailure, esc, formatDuration, formatOffset } from './format';

const W = 960;
const H = 300;
const M = { left: 60, right: 20, top: 24, bottom: 50 };
const PW = W - M.left - M.right;
const PH = H - M.top - M.bottom;
/** Round labels closer than this (px) to the previous one are left out. */
const LABEL_GAP = 44;

const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const TIME_STEPS = [100, 200, 500, SEC, 2 * SEC, 5 * SEC, 10 * SEC, 15 * SEC, 30 * SEC, MIN, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY];

export function worldSizeChart(t: RecordedJob, f: JobFigures): string {
  const domain = Math.max(f.wallMs, 1);
  const maxWs = Math.max(0, ...f.worldSize.map((s) => s.worldSize));
  const yStep = niceStep(Math.max(maxWs, 1) / 5);
  const yMax = Math.max(yStep, Math.ceil(maxWs / yStep) * yStep);
  const x = (ms: number) => round1(M.left + (Math.min(Math.max(ms, 0), domain) / domain) * PW);
  const y = (v: number) => round1(M.top + PH - (v / yMax) * PH);
  const parts: string[] = [];

  for (let v = 0; v <= yMax; v += yStep) {
    parts.push(`<line class="grid" x1="${M.left}" x2="${M.left + PW}" y1="${y(v)}" y2="${y(v)}"/>`,
      `<text x="${M.left - 8}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  const xStep = TIME_STEPS.find((s) => domain / s <= 10) ?? Math.ceil(domain / 10 / DAY) * DAY;
  for (let ms = 0; ms <= domain; ms += xStep) {
    parts.push(`<line class="grid" x1="${x(ms)}" x2="${x(ms)}" y1="${M.top + PH}" y2="${M.top + PH + 5}"/>`,
      `<text x="${x(ms)}" y="${M.top + PH + 18}" text-anchor="middle">${tickLabel(ms)}</text>`);
  }
  parts.push(
    `<text class="axis-label" x="${M.left + PW / 2}" y="${H - 8}" text-anchor="middle">time since job start</text>`,
    `<text class="axis-label" transform="translate(16 ${M.top + PH / 2}) rotate(-90)" text-anchor="middle">world size (workers)</text>`,
  );

  const steps = f.worldSize;
  const line = steps.map((s, i) => (i === 0 ? `M${x(s.atMs)} ${y(s.worldSize)}` : `H${x(s.atMs)} V${y(s.worldSize)}`)).join(' ');
  parts.push(`<path class="ws-area" d="${line} V${y(0)} H${x(0)} Z"/>`, `<path class="ws" d="${line}"/>`);
  parts.push(...restartMarks(t, x, y));
  if (t.rounds.length === 0) parts.push(`<text class="axis-label" x="${M.left + PW / 2}" y="${M.top + PH / 2}" text-anchor="middle">no round ran</text>`);

  for (const fl of t.failures) {
    const at = sinceStart(t, fl.at);
    parts.push(`<circle class="fail" cx="${x(at)}" cy="${y(sizeJustBefore(f, at))}" r="5.5"><title>${esc(`${formatOffset(at)} round ${fl.round}: ${describeFailure(fl)}`)}</title></circle>`);
  }
  const label = `world size over time: ${t.rounds.length} round(s), ${t.failures.length} failure(s)`;
  return `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(label)}">
${parts.join('\n')}
</svg>`;
}

/**
 * Per round: its label above the plot; after the first, a band over the time no round ran before
 * it (the recovery) and a dashed line where it started, red after a failure, grey after a change.
 */
function restartMarks(t: RecordedJob, x: (ms: number) => number, y: (v: number) => number): string[] {
  const rounds = [...t.rounds].sort((a, b) => a.round - b.round);
  const marks: string[] = [];
  let lastLabel = -Infinity;
  rounds.forEach((r, i) => {
    const rx = x(sinceStart(t, r.startedAt));
    const before = rounds[i - 1];
    let kind = '';
    if (before) {
      const after: EndCause = classifyEnd(before.endReason) ?? 'other';
      kind = after === 'worker-failure' || after === 'node-lost' ? 'failure' : 'change';
      const from = before.endedAt === null ? rx : x(sinceStart(t, before.endedAt));
      const tip = esc(`round ${r.round} started ${formatOffset(sinceStart(t, r.startedAt))}, ${formatDuration(Date.parse(r.startedAt) - Date.parse(before.endedAt ?? r.startedAt))} after round ${before.round} ended: ${before.endReason ?? 'no recorded end'}`);
      if (rx > from) marks.push(`<rect class="gap gap-${kind}" x="${from}" y="${M.top}" width="${round1(rx - from)}" height="${PH}"><title>${tip}</title></rect>`);
      marks.push(`<line class="restart restart-${kind}" x1="${rx}" x2="${rx}" y1="${M.top - 4}" y2="${y(0)}"><title>${tip}</title></line>`);
    }
    if (rx - lastLabel >= LABEL_GAP) {
      marks.push(`<text class="round-label${kind ? ` label-${kind}` : ''}" x="${rx + 4}" y="${M.top - 8}">round ${r.round}</text>`);
      lastLabel = rx;
    }
  });
  return marks;
}

/** The world size while a failure happened: the step in force just before `atMs` (its round ends at the same instant). */
function sizeJustBefore(f: JobFigures, atMs: number): number {
  const before = f.worldSize.filter((s) => s.atMs < atMs);
  return (before.at(-1) ?? f.worldSize[0]!).worldSize;
}

/** 1, 2 or 5 × 10^k, at least `raw`, at least 1 (world sizes are whole). */
function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) ?? 10 * p;
}

/** `0`, `0.5s`, `45s`, `1m30s`, `2h`, `1d12h`. */
function tickLabel(ms: number): string {
  if (ms === 0) return '0';
  if (ms < SEC) return `${ms / SEC}s`;
  const units: [number, string][] = [[DAY, 'd'], [HOUR, 'h'], [MIN, 'm'], [SEC, 's']];
  let rest = ms;
  const out: string[] = [];
  for (const [size, name] of units) {
    const n = Math.floor(rest / size);
    if (n) out.push(`${n}${name}`);
    rest -= n * size;
  }
  return out.join('');
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}
