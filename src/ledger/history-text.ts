/**
 * `telastic history JOB` as text: a header (id, state, pool, start and end, the spec in a line),
 * then every record in the order the job wrote it (seq), each at its time since the job started.
 * Pure. User text (ids, messages, paths) goes through `printable`.
 */
import type { RecordedJob } from './figures';
import type { NodeEventKind } from './records';
import { sinceStart } from './figures';
import { describeFailure, describeSpec, formatDuration, formatOffset, printable, stateLabel } from './format';

/** Members listed per round; a bigger round shows the first ones and how many more. */
const MAX_MEMBERS = 32;
const INDENT = 12;

interface Line {
  seq: number;
  at: string;
  text: string;
}

export function historyText(t: RecordedJob, now: Date): string {
  const { job } = t;
  const end = job.endedAt ?? now.toISOString();
  const header = [
    `job ${printable(job.jobId)} · ${printable(stateLabel(t))}${job.pool ? ` · pool ${printable(job.pool)}` : ''}`,
    `started ${job.startedAt}${job.endedAt ? ` · ended ${job.endedAt}` : ' · not ended'} (${formatDuration(Date.parse(end) - Date.parse(job.startedAt))}${job.endedAt ? '' : ' so far'})`,
    `spec    ${printable(describeSpec(job.spec))}`,
  ];
  const lines = [...events(t)].sort((a, b) => a.seq - b.seq);
  lines.push(job.endedAt ? { seq: Infinity, at: job.endedAt, text: `job ${printable(job.state)}${job.endReason ? `: ${printable(job.endReason)}` : ''}` } : { seq: Infinity, at: end, text: 'now: the job has not ended' });
  const body = lines.map((l) => {
    const [first, ...more] = l.text.split('\n');
    const head = `${formatOffset(sinceStart(t, l.at)).padStart(INDENT - 2)}  ${first}`;
    return [head, ...more.map((m) => ' '.repeat(INDENT) + m)].join('\n');
  });
  return [...header, '', ...body].join('\n');
}

function* events(t: RecordedJob): Generator<Line> {
  for (const r of t.rounds) {
    const shown = r.members.slice(0, MAX_MEMBERS).map((m) => `${printable(m.nodeId)} (${m.groupRank})`);
    if (r.members.length > MAX_MEMBERS) shown.push(`… ${r.members.length - MAX_MEMBERS} more`);
    yield { seq: r.seq, at: r.startedAt, text: `round ${r.round} started · world size ${r.worldSize} · nodes (group rank): ${shown.join(', ')}` };
    if (r.endedAt !== null) {
      const took = formatDuration(Date.parse(r.endedAt) - Date.parse(r.startedAt));
      const reason = r.endReason ? `: ${printable(r.endReason)}` : '';
      // endedSeq is missing only from rows written before it was read; such an end goes last.
      yield { seq: r.endedSeq ?? Number.MAX_SAFE_INTEGER, at: r.endedAt, text: `round ${r.round} ended after ${took}${reason}` };
    }
  }
  for (const f of t.failures) yield { seq: f.seq, at: f.at, text: `round ${f.round} failure: ${printable(describeFailure(f))}` };
  for (const c of t.checkpoints) {
    const step = c.step === null ? '' : ` (step ${c.step})`;
    const chosen = c.chosenForRound === null ? '' : `, chosen for round ${c.chosenForRound}`;
    yield { seq: c.seq, at: c.at, text: `checkpoint ${printable(c.path)}${step}${chosen}` };
  }
  const verbs: Record<NodeEventKind, string> = { join: 'joined', leave: 'left', drain: 'drained', lost: 'lost', quarantine: 'quarantined', release: 'released from quarantine' };
  for (const e of t.nodeEvents) {
    // derive.ts gives a departure its reason as cause (lost, drained, left): no news after the verb.
    const cause = e.cause && !['lost', 'drained', 'left', e.event].includes(e.cause) ? `: ${printable(e.cause)}` : '';
    yield { seq: e.seq, at: e.at, text: `node ${printable(e.nodeId)} ${verbs[e.event] ?? printable(e.event)}${cause}` };
  }
}
