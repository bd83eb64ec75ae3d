/**
 * The ledger's schema as versioned migrations, applied in order by `migrate` (migrate.ts). A
 * version once released is never edited: change the schema by appending a new version.
 *
 * Record tables (`rounds`, `node_events`, `failures`, `checkpoints`) carry the `seq` the job gave
 * the record and a unique (job_id, seq), so a retried batch inserts nothing twice. `jobs` holds one
 * row per job; its `seq` is the last `job`/`jobEnded` record applied to it, which makes its upserts
 * idempotent too. Times are `timestamptz`; `rounds.ended_seq` is the seq of its `roundEnded`.
 * `quarantine` has a row per node ever quarantined; `released_at` is null while it is kept out.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs, rounds, node events, failures, checkpoints',
    sql: `
      CREATE TABLE jobs (
        job_id text PRIMARY KEY,
        seq bigint NOT NULL,
        spec jsonb NOT NULL,
        state text NOT NULL,
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        pool text
      );
      CREATE TABLE rounds (
        job_id text NOT NULL,
        round integer NOT NULL,
        seq bigint NOT NULL,
        members jsonb NOT NULL,
        world_size integer NOT NULL,
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        end_reason text,
        ended_seq bigint,
        PRIMARY KEY (job_id, round),
        UNIQUE (job_id, seq)
      );
      CREATE TABLE node_events (
        job_id text NOT NULL,
        seq bigint NOT NULL,
        node_id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('join', 'leave', 'drain', 'lost', 'quarantine')),
        cause text,
        at timestamptz NOT NULL,
        UNIQUE (job_id, seq)
      );
      CREATE TABLE failures (
        job_id text NOT NULL,
        seq bigint NOT NULL,
        round integer NOT NULL,
        node_id text NOT NULL,
        rank integer,
        exit_code integer,
        signal text,
        message text,
        at timestamptz NOT NULL,
        UNIQUE (job_id, seq)
      );
      CREATE TABLE checkpoints (
        job_id text NOT NULL,
        seq bigint NOT NULL,
        path text NOT NULL,
        step bigint,
        saved_at timestamptz NOT NULL,
        chosen_for_round integer,
        UNIQUE (job_id, seq)
      );
    `,
  },
  {
    version: 2,
    name: 'quarantined nodes',
    sql: `
      CREATE TABLE quarantine (
        node_id text PRIMARY KEY,
        since timestamptz NOT NULL,
        reason text NOT NULL,
        released_at timestamptz
      );
      CREATE INDEX failures_node_at ON failures (node_id, at);
      ALTER TABLE node_events DROP CONSTRAINT node_events_kind_check;
      ALTER TABLE node_events ADD CONSTRAINT node_events_kind_check
        CHECK (kind IN ('join', 'leave', 'drain', 'lost', 'quarantine', 'release'));
    `,
  },
  {
    version: 3,
    name: 'why a job ended (a verdict such as no progress)',
    sql: `ALTER TABLE jobs ADD COLUMN end_reason text;`,
  },
];
