/**
 * Applies the ledger's migrations (migrations.ts) that a database lacks. Each version runs in its
 * own transaction that first takes a transaction-level advisory lock, so two processes migrating
 * at once apply each version exactly once (the second waits, then sees it applied). Running it
 * again applies nothing.
 */
import type pg from 'pg';
import { migrations as allMigrations, type Migration } from './migrations';

/** Key of the advisory lock: the bytes of "telastic" (any fixed bigint shared by every process). */
const lockKey = '8387229046852053347';

const createTable = `
  CREATE TABLE IF NOT EXISTS telastic_schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`;

/** Applies the missing versions in order; returns the versions this call applied. */
export async function migrate(
  db: pg.ClientBase | pg.Pool,
  migrations: readonly Migration[] = allMigrations,
): Promise<{ applied: number[] }> {
  const client = isPool(db) ? await db.connect() : db;
  try {
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (await applyOne(client, m)) applied.push(m.version);
    }
    return { applied };
  } finally {
    if (isPool(db)) (client as pg.PoolClient).release();
  }
}

async function applyOne(client: pg.ClientBase, m: Migration): Promise<boolean> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [lockKey]);
    await client.query(createTable);
    const done = await client.query('SELECT 1 FROM telastic_schema_migrations WHERE version = $1', [m.version]);
    if (done.rowCount === 0) {
      await client.query(m.sql);
      await client.query('INSERT INTO telastic_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
    await client.query('COMMIT');
    return done.rowCount === 0;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

function isPool(db: pg.ClientBase | pg.Pool): db is pg.Pool {
  return 'totalCount' in db;
}
