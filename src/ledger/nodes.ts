/**
 * Nodes as the ledger sees them across jobs (for `telastic nodes`): how often each failed, lately
 * and in all, its last failure, and whether it is quarantined; and the release of a quarantined
 * node. A failure counts towards quarantine only when it came after the node's last release, so a
 * released node starts again from nothing. Only nodes that failed or were quarantined are listed.
 */
import type pg from 'pg';

export interface NodeSummary {
  nodeId: string;
  /** Failures blamed on this node, in every job, ever. */
  failures: number;
  /** Failures within the window that came after the node's last release: what quarantine counts. */
  recentFailures: number;
  lastFailure: { at: string; jobId: string; round: number; rank: number | null; exitCode: number | null; signal: string | null; message: string | null } | null;
  /** Kept out of jobs since `since`; null when it is not. */
  quarantined: { since: string; reason: string } | null;
  /** When it was last released from quarantine; null when never (or quarantined again since). */
  releasedAt: string | null;
}

/** Every node that failed or was ever quarantined, by id; `windowMs` back from `now` counts as recent. */
export async function nodeSummaries(pool: pg.Pool, windowMs: number, now: Date): Promise<NodeSummary[]> {
  const { rows } = await pool.query(`
    WITH known AS (SELECT node_id FROM failures UNION SELECT node_id FROM quarantine),
    counts AS (
      SELECT f.node_id, count(*) AS total,
             count(*) FILTER (WHERE f.at > $1 AND (q.released_at IS NULL OR f.at > q.released_at)) AS recent
      FROM failures f LEFT JOIN quarantine q USING (node_id)
      GROUP BY f.node_id),
    last AS (
      SELECT DISTINCT ON (node_id) node_id, at, job_id, round, rank, exit_code, signal, message
      FROM failures ORDER BY node_id, at DESC, job_id DESC, seq DESC)
    SELECT k.node_id, coalesce(c.total, 0) AS total, coalesce(c.recent, 0) AS recent,
           l.at, l.job_id, l.round, l.rank, l.exit_code, l.signal, l.message,
           q.since, q.reason, q.released_at
    FROM known k LEFT JOIN counts c USING (node_id) LEFT JOIN last l USING (node_id) LEFT JOIN quarantine q USING (node_id)
    ORDER BY k.node_id`, [new Date(now.getTime() - windowMs)]);
  return rows.map((r) => ({
    nodeId: r.node_id,
    failures: Number(r.total),
    recentFailures: Number(r.recent),
    lastFailure: r.at === null ? null : {
      at: (r.at as Date).toISOString(), jobId: r.job_id, round: r.round, rank: r.rank, exitCode: r.exit_code, signal: r.signal, message: r.message,
    },
    quarantined: r.since !== null && r.released_at === null ? { since: (r.since as Date).toISOString(), reason: r.reason } : null,
    releasedAt: r.released_at === null ? null : (r.released_at as Date).toISOString(),
  }));
}

/**
 * Ends a node's quarantine at `at` (the ledger's record of it: whatever keeps quarantined nodes
 * out of jobs reads it from here). False when the node is not quarantined, so nothing changed.
 */
export async function releaseNode(pool: pg.Pool, nodeId: string, at: Date): Promise<boolean> {
  const r = await pool.query('UPDATE quarantine SET released_at = $2 WHERE node_id = $1 AND released_at IS NULL', [nodeId, at]);
  return (r.rowCount ?? 0) > 0;
}
