/**
 * Bad-node quarantine (DESIGN.md, Ledger). A node with `failures` failures attributed to it within
 * `window`, across all jobs, is quarantined: every job keeps it out of its rounds until an operator
 * releases it (`telastic nodes --release NODE`). Failures before the node's last release do not
 * count again. The verdict is a pure function; `checkQuarantine` reads and writes the ledger.
 *
 * The policy is the ledger host's (controller, `telastic dev`): TELASTIC_QUARANTINE_AFTER (default
 * 3; 0 turns quarantine off) and TELASTIC_QUARANTINE_WINDOW (default 1h; 90s, 30m, 1h30m, 2d; a bare
 * number is seconds), parsed as `telastic nodes --window` is.
 */
import type pg from 'pg';
import type { z } from 'zod';
import { durationToMs, intAtLeast, parseValue } from '../config/values';
import type { Quarantine } from '../job/quarantine';
import { formatDuration } from './format';

export interface QuarantinePolicy {
  /** Failures within the window that quarantine a node; 0: never. */
  failures: number;
  windowMs: number;
}

export const DEFAULT_QUARANTINE: QuarantinePolicy = { failures: 3, windowMs: 3_600_000 };

/** The policy from the environment; a bad value is one line naming the variable (UsageError). */
export function quarantinePolicy(env: NodeJS.ProcessEnv): QuarantinePolicy {
  const read = <T extends z.ZodTypeAny>(name: string, schema: T, fallback: z.output<T>): z.output<T> => {
    const raw = env[name];
    return raw === undefined || raw === '' ? fallback : parseValue(schema, { raw, from: name });
  };
  return {
    failures: read('TELASTIC_QUARANTINE_AFTER', intAtLeast(0), DEFAULT_QUARANTINE.failures),
    windowMs: read('TELASTIC_QUARANTINE_WINDOW', durationToMs, DEFAULT_QUARANTINE.windowMs),
  };
}

export interface NodeFailure {
  at: number;
  jobId: string;
  message: string | null;
}

/**
 * Why `failures` (of one node, any order) put it in quarantine at `now`, or null. Only failures
 * after `releasedAt` (its last release) and within the window count.
 */
export function quarantineVerdict(failures: NodeFailure[], policy: QuarantinePolicy, now: number, releasedAt: number | null): string | null {
  if (policy.failures <= 0) return null;
  const since = Math.max(now - policy.windowMs, releasedAt ?? -Infinity);
  const counted = failures.filter((f) => f.at > since && f.at <= now).sort((a, b) => a.at - b.at);
  if (counted.length < policy.failures) return null;
  const jobs = new Set(counted.map((f) => f.jobId));
  const last = counted[counted.length - 1];
  return `${counted.length} failures in ${formatDuration(policy.windowMs)} (${jobs.size} job${jobs.size === 1 ? '' : 's'}); last: ${last.message ?? 'no message'}`;
}

/**
 * Of `nodeIds`, the nodes in quarantine at `now`: those already in it, and those the policy puts
 * in it now (recorded, so that every job and `telastic nodes` see it).
 */
export async function checkQuarantine(pool: pg.Pool, nodeIds: string[], policy: QuarantinePolicy, now: number): Promise<Quarantine[]> {
  if (nodeIds.length === 0) return [];
  const rows = (await pool.query('SELECT node_id, reason, released_at FROM quarantine WHERE node_id = ANY($1)', [nodeIds])).rows as {
    node_id: string; reason: string; released_at: Date | null;
  }[];
  const known = new Map(rows.map((r) => [r.node_id, r]));
  const out: Quarantine[] = rows.filter((r) => r.released_at === null).map((r) => ({ nodeId: r.node_id, reason: r.reason }));
  const open = new Set(out.map((q) => q.nodeId));
  const candidates = nodeIds.filter((n) => !open.has(n));
  if (policy.failures <= 0 || candidates.length === 0) return out;
  const failures = (await pool.query(
    'SELECT node_id, job_id, message, at FROM failures WHERE node_id = ANY($1) AND at > $2',
    [candidates, new Date(now - policy.windowMs)],
  )).rows as { node_id: string; job_id: string; message: string | null; at: Date }[];
  for (const nodeId of candidates) {
    const mine = failures.filter((f) => f.node_id === nodeId).map((f) => ({ at: f.at.getTime(), jobId: f.job_id, message: f.message }));
    const reason = quarantineVerdict(mine, policy, now, known.get(nodeId)?.released_at?.getTime() ?? null);
    if (reason === null) continue;
    // Another job may decide the same at once: the first reason stays.
    const r = await pool.query(
      `INSERT INTO quarantine (node_id, since, reason) VALUES ($1, $2, $3)
       ON CONFLICT (node_id) DO UPDATE SET since = excluded.since, reason = excluded.reason, released_at = NULL
       WHERE quarantine.released_at IS NOT NULL
       RETURNING reason`,
      [nodeId, new Date(now), reason],
    );
    const stored = r.rows[0]?.reason ?? (await pool.query('SELECT reason FROM quarantine WHERE node_id = $1', [nodeId])).rows[0]?.reason ?? reason;
    out.push({ nodeId, reason: stored });
  }
  return out;
}
