/**
 * What a job's timeline adds up to (for `telastic report`): wall time, productive time, goodput,
 * restarts by cause, mean time to recover, and world size over time. Pure: a timeline and `now`
 * (for a job or round still running) in, numbers out. Times are milliseconds since the job started.
 */
import type { JobTimeline } from './timeline';

/** A timeline of a job the ledger knows (its `job` row is there). */
export type RecordedJob = JobTimeline & { job: NonNullable<JobTimeline['job']> };

export function isRecorded(t: JobTimeline): t is RecordedJob {
  return t.job !== null;
}

/**
 * Why a round ended, from its `end_reason` (written by derive.ts: `failure: <message>`,
 * `failure: node <id> lost: …` (before: `failure: node lost: …`), `membership change`,
 * `cancelled`, `succeeded`; a `roundCause` replaces a failure's once blame settled). A failure or a lost
 * node counts one restart of the job (TORCHELASTIC_RESTART_COUNT); a membership change (a node
 * admitted, drained, gone, a scale) counts none but still starts a new round.
 */
export const endCauses = ['worker-failure', 'node-lost', 'membership', 'cancelled', 'succeeded', 'other'] as const;
export type EndCause = (typeof endCauses)[number];

export const endCauseLabels: Record<EndCause, string> = {
  'worker-failure': 'worker failure',
  'node-lost': 'node lost',
  membership: 'membership change',
  cancelled: 'cancelled',
  succeeded: 'succeeded',
  other: 'other',
};

/** The cause of a round's end; null while the round is open. */
export function classifyEnd(reason: string | null): EndCause | null {
  if (reason === null) return null;
  const r = reason.trim().toLowerCase();
  // A node id has no spaces but may have colons (host:1).
  if (/^(failure: )?node (\S+ lost\b|[^:]*\blost\b)/.test(r) || r === 'lost') return 'node-lost';
  if (/^(failure|failed)\b/.test(r)) return 'worker-failure';
  if (/^cancel/.test(r)) return 'cancelled';
  if (/^succeeded\b/.test(r)) return 'succeeded';
  if (/^(membership|scale|scaled|join|admitting|drain|leave|left|restarted)\b/.test(r)) return 'membership';
  return 'other';
}

/** World size from `atMs` until the next step (0: no round running). */
export interface WorldSizeStep {
  atMs: number;
  worldSize: number;
}

export interface JobFigures {
  /** Job start to its end, or to `now` while it runs. */
  wallMs: number;
  /** Summed time during which a round's workers were all running (see `jobFigures`). */
  productiveMs: number;
  /** productiveMs ÷ wallMs, 0..1; null when the wall time is 0. */
  goodput: number | null;
  /** Rounds after the first, whatever ended the round before. */
  restarts: number;
  /** `restarts` by why the round before ended; causes that never occurred are absent. */
  restartsByCause: Partial<Record<EndCause, number>>;
  /** Restarts a failure or a lost node caused: what TORCHELASTIC_RESTART_COUNT counts. */
  failureRestarts: number;
  /** Mean of (next round's start − end of a round a failure or lost node ended); null: none. */
  mttrMs: number | null;
  /** How many recoveries `mttrMs` is the mean of. */
  recoveries: number;
  /** A step series from 0 to `wallMs`; its last step repeats the final world size at `wallMs`. */
  worldSize: WorldSizeStep[];
  /** The job has no end yet; `now` stood in for it. */
  running: boolean;
}

/**
 * The figures of one job. Productive time counts each round from when it was recorded as started
 * (the job's phase became running: every member's workers launched) to its end, or to the job's
 * end or `now` while it is open. When workers got "past their first step" is not observable
 * without the training script's help, so loading data and rebuilding the model count as
 * productive: goodput here is an upper bound. Overlapping rounds (which the ledger should never
 * hold) are not merged.
 */
export function jobFigures(t: RecordedJob, now: Date): JobFigures {
  const start = ms(t.job.startedAt);
  const end = t.job.endedAt === null ? Math.max(start, now.getTime()) : ms(t.job.endedAt);
  const wallMs = Math.max(0, end - start);
  const rel = (iso: string) => clamp(ms(iso) - start, 0, wallMs);
  const rounds = [...t.rounds].sort((a, b) => a.round - b.round).map((r) => ({
    startMs: rel(r.startedAt),
    endMs: r.endedAt === null ? wallMs : rel(r.endedAt),
    cause: classifyEnd(r.endReason),
    worldSize: r.worldSize,
  }));

  const productiveMs = rounds.reduce((sum, r) => sum + Math.max(0, r.endMs - r.startMs), 0);
  const restartsByCause: Partial<Record<EndCause, number>> = {};
  const recoveries: number[] = [];
  rounds.slice(0, -1).forEach((r, i) => {
    const cause = r.cause ?? 'other'; // a later round started while this one has no recorded end
    restartsByCause[cause] = (restartsByCause[cause] ?? 0) + 1;
    if (cause === 'worker-failure' || cause === 'node-lost') recoveries.push(Math.max(0, rounds[i + 1]!.startMs - r.endMs));
  });
  const restarts = Math.max(0, rounds.length - 1);
  return {
    wallMs,
    productiveMs,
    goodput: wallMs > 0 ? Math.min(1, productiveMs / wallMs) : null,
    restarts,
    restartsByCause,
    failureRestarts: (restartsByCause['worker-failure'] ?? 0) + (restartsByCause['node-lost'] ?? 0),
    mttrMs: recoveries.length ? recoveries.reduce((a, b) => a + b, 0) / recoveries.length : null,
    recoveries: recoveries.length,
    worldSize: worldSizeSteps(rounds, wallMs),
    running: t.job.endedAt === null,
  };
}

/** 0 until the first round, each round's size while it runs, 0 in the gaps; one step per change. */
function worldSizeSteps(rounds: { startMs: number; endMs: number; worldSize: number }[], wallMs: number): WorldSizeStep[] {
  const changes: WorldSizeStep[] = [{ atMs: 0, worldSize: 0 }];
  for (const r of rounds) {
    changes.push({ atMs: r.startMs, worldSize: r.worldSize });
    if (r.endMs < wallMs) changes.push({ atMs: r.endMs, worldSize: 0 });
  }
  changes.sort((a, b) => a.atMs - b.atMs); // stable: at equal times the later record wins below
  const steps: WorldSizeStep[] = [];
  for (const c of changes) {
    if (steps.length && steps[steps.length - 1]!.atMs === c.atMs) steps.pop();
    if (steps.length && steps[steps.length - 1]!.worldSize === c.worldSize) continue;
    steps.push(c);
  }
  steps.push({ atMs: wallMs, worldSize: steps[steps.length - 1]!.worldSize });
  return steps;
}

/** Milliseconds since the job started of an ISO time. */
export function sinceStart(t: RecordedJob, iso: string): number {
  return ms(iso) - ms(t.job.startedAt);
}

function ms(iso: string): number {
  return new Date(iso).getTime();
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
