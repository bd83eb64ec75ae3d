/**
 * Reads one job's history back from the ledger (for `telastic history`): its job row, then rounds,
 * failures, checkpoints and node events, each in the order the job numbered them (seq). A round
 * also carries `endedSeq`, the seq of its `roundEnded`, so a reader can place its end among the
 * other records. Times come back as ISO strings, like the records that wrote them.
 */
import type pg from 'pg';
import type { NodeEventKind, RoundMember } from './records';

export interface JobTimeline {
  job: { jobId: string; spec: Record<string, unknown>; state: string; startedAt: string; endedAt: string | null; endReason: string | null; pool: string | null } | null;
  rounds: { seq: number; round: number; members: RoundMember[]; worldSize: number; startedAt: string; endedAt: string | null; endReason: string | null; endedSeq: number | null }[];
  failures: { seq: number; round: number; nodeId: string; rank: number | null; exitCode: number | null; signal: string | null; message: string | null; at: string }[];
  checkpoints: { seq: number; path: string; step: number | null; at: string; chosenForRound: number | null }[];
  nodeEvents: { seq: number; nodeId: string; event: NodeEventKind; cause: string | null; at: string }[];
}

/** One job's history; `job` is null (and every list empty) when the ledger has never heard of it. */
export async function jobTimeline(pool: pg.Pool, jobId: string): Promise<JobTimeline> {
  const q = async (sql: string) => (await pool.query(sql, [jobId])).rows;
  const [jobs, rounds, failures, checkpoints, nodeEvents] = await Promise.all([
    q('SELECT * FROM jobs WHERE job_id = $1'),
    q('SELECT * FROM rounds WHERE job_id = $1 ORDER BY seq'),
    q('SELECT * FROM failures WHERE job_id = $1 ORDER BY seq'),
    q('SELECT * FROM checkpoints WHERE job_id = $1 ORDER BY seq'),
    q('SELECT * FROM node_events WHERE job_id = $1 ORDER BY seq'),
  ]);
  const j = jobs[0];
  return {
    job: j ? { jobId: j.job_id, spec: j.spec, state: j.state, startedAt: iso(j.started_at)!, endedAt: iso(j.ended_at), endReason: j.end_reason ?? null, pool: j.pool } : null,
    rounds: rounds.map((r) => ({
      seq: Number(r.seq), round: r.round, members: r.members, worldSize: r.world_size,
      startedAt: iso(r.started_at)!, endedAt: iso(r.ended_at), endReason: r.end_reason,
      endedSeq: r.ended_seq === null ? null : Number(r.ended_seq),
    })),
    failures: failures.map((f) => ({
      seq: Number(f.seq), round: f.round, nodeId: f.node_id, rank: f.rank, exitCode: f.exit_code,
      signal: f.signal, message: f.message, at: iso(f.at)!,
    })),
    checkpoints: checkpoints.map((c) => ({
      seq: Number(c.seq), path: c.path, step: c.step === null ? null : Number(c.step), at: iso(c.saved_at)!,
      chosenForRound: c.chosen_for_round,
    })),
    nodeEvents: nodeEvents.map((e) => ({ seq: Number(e.seq), nodeId: e.node_id, event: e.kind, cause: e.cause, at: iso(e.at)! })),
  };
}

function iso(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}
