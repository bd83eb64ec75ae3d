/**
 * The ledger on both of its databases, a real PostgreSQL 15 and the embedded PGlite (hosted and
 * served over the wire, as the commands use it): migrations, a whole job written and read back,
 * retries, bad records. PostgreSQL alone: an outage (pg_ctl stop).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { hostEmbeddedLedger } from '../../src/ledger/embedded';
import { migrate } from '../../src/ledger/migrate';
import { jobTimeline, writeRecords, type LedgerRecord } from '../../src/ledger/store';
import { startPostgres, type TestPostgres } from '../setup/postgres';
import { at, jobRecords, members } from './records';

interface Database {
  pool: pg.Pool;
  /** PostgreSQL's cluster, which the outage test stops and starts. */
  postgres?: TestPostgres;
  close(): Promise<void>;
}

async function postgres(): Promise<Database> {
  const cluster = await startPostgres();
  const pool = new pg.Pool({ connectionString: cluster.url, max: 4 });
  pool.on('error', () => undefined); // idle clients die with the outage test; the pool replaces them
  return {
    pool,
    postgres: cluster,
    async close() {
      await pool.end();
      await cluster.destroy();
    },
  };
}

async function pglite(): Promise<Database> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-store-pglite-'));
  const ledger = await hostEmbeddedLedger(path.join(dir, 'ledger')).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  return {
    pool: ledger.pool,
    async close() {
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.each([
  ['PostgreSQL', postgres],
  ['PGlite', pglite],
])('%s', (name, open) => {
  let db: Database;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await open();
    pool = db.pool;
  });

  afterAll(() => db?.close());

  async function rowCounts(jobId: string): Promise<number[]> {
    const tables = ['jobs', 'rounds', 'node_events', 'failures', 'checkpoints'];
    return Promise.all(tables.map(async (t) => Number((await pool.query(`SELECT count(*) FROM ${t} WHERE job_id = $1`, [jobId])).rows[0].count)));
  }

  describe('migrate', () => {
    test('migrates an empty database, and a second run applies nothing', async () => {
      await pool.query('DROP TABLE IF EXISTS jobs, rounds, node_events, failures, checkpoints, quarantine, telastic_schema_migrations');
      expect(await migrate(pool)).toEqual({ applied: [1, 2, 3] });
      const client = await pool.connect();
      try {
        expect(await migrate(client)).toEqual({ applied: [] });
      } finally {
        client.release();
      }
      const { rows } = await pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`);
      expect(rows.map((r) => r.table_name)).toEqual(['checkpoints', 'failures', 'jobs', 'node_events', 'quarantine', 'rounds', 'telastic_schema_migrations']);
    });

    test('two processes migrating at once apply each version once', async () => {
      await pool.query('DROP TABLE jobs, rounds, node_events, failures, checkpoints, quarantine, telastic_schema_migrations');
      const results = await Promise.all([migrate(pool), migrate(pool)]);
      // Each version takes the lock on its own, so the two may share the work ([1] and [2]): once each is the point.
      expect(results.flatMap((r) => r.applied).sort()).toEqual([1, 2, 3]);
    });
  });

  describe('writeRecords', () => {
    beforeAll(() => migrate(pool));

    test('a job that ended with a verdict keeps it (history and report show it)', async () => {
      const verdict = 'no progress in 3 restarts (every round resumed from ckpt_00000100.pt)';
      const recs = jobRecords('job-verdict').map((r) => (r.kind === 'jobEnded' ? { ...r, state: 'failed', reason: verdict } : r));
      await writeRecords(pool, recs);
      expect((await jobTimeline(pool, 'job-verdict')).job).toMatchObject({ state: 'failed', endReason: verdict });
    });

    test('a whole job is written and read back in order', async () => {
      expect(await writeRecords(pool, jobRecords('job-1'))).toBe(12);
      const t = await jobTimeline(pool, 'job-1');
      expect(t.job).toEqual({
        jobId: 'job-1', spec: { minNodes: 1, maxNodes: 2, script: 'train.py' }, state: 'succeeded', startedAt: at(0), endedAt: at(41), endReason: null, pool: null,
      });
      expect(t.rounds).toEqual([
        { seq: 4, round: 1, members: members('a', 'b'), worldSize: 2, startedAt: at(3), endedAt: at(21), endReason: 'node lost', endedSeq: 8 },
        { seq: 10, round: 2, members: members('a'), worldSize: 1, startedAt: at(22), endedAt: at(40), endReason: 'succeeded', endedSeq: 11 },
      ]);
      expect(t.failures).toEqual([{ seq: 7, round: 1, nodeId: 'b', rank: null, exitCode: null, signal: null, message: 'node lost', at: at(20) }]);
      expect(t.checkpoints).toEqual([
        { seq: 5, path: '/ckpt/step-100', step: 100, at: at(10), chosenForRound: null },
        { seq: 9, path: '/ckpt/step-100', step: 100, at: at(22), chosenForRound: 2 },
      ]);
      expect(t.nodeEvents.map((e) => [e.seq, e.nodeId, e.event, e.cause])).toEqual([[2, 'a', 'join', null], [3, 'b', 'join', null], [6, 'b', 'lost', 'heartbeat timeout']]);
      expect(await jobTimeline(pool, 'no-such-job')).toEqual({ job: null, rounds: [], failures: [], checkpoints: [], nodeEvents: [] });
    });

    test('the same batch written twice is counted once and stored once', async () => {
      const records = jobRecords('job-2');
      expect(await writeRecords(pool, records)).toBe(12);
      expect(await writeRecords(pool, records)).toBe(0);
      expect(await writeRecords(pool, records.slice(0, 5))).toBe(0); // an older, overlapping batch
      expect(await rowCounts('job-2')).toEqual([1, 2, 3, 1, 2]);
      expect((await jobTimeline(pool, 'job-2')).job?.state).toBe('succeeded');
    });

    test('a roundCause replaces its ended round\'s reason once, keeping its end', async () => {
      const records = jobRecords('job-5');
      const cause = { kind: 'roundCause', jobId: 'job-5', seq: 13, round: 1, reason: 'failure: node b lost: heartbeat timeout', at: at(42) } as const;
      expect(await writeRecords(pool, [...records, cause])).toBe(13);
      expect(await writeRecords(pool, [cause])).toBe(0);
      expect((await jobTimeline(pool, 'job-5')).rounds[0]).toMatchObject({ endReason: cause.reason, endedAt: at(21), endedSeq: 8 });
    });

    test('a bad record is rejected naming its field, and nothing of its batch is written', async () => {
      const records = jobRecords('job-3');
      const bad = { ...records[3], worldSize: 0 } as LedgerRecord;
      await expect(writeRecords(pool, [records[0]!, bad])).rejects.toThrow(/^record 1: worldSize: /);
      await expect(writeRecords(pool, [records[0]!, records[7]!])).rejects.toThrow('roundEnded seq 8: jobId job-3 has no round 1');
      expect(await rowCounts('job-3')).toEqual([0, 0, 0, 0, 0]);
    });

    if (name === 'PostgreSQL') test('a write during an outage fails; after it the same batch is written exactly once', async () => {
      const records = jobRecords('job-4');
      await db.postgres!.stop();
      try {
        const err = await writeRecords(pool, records).then(() => null, (e: Error & { code?: string }) => e);
        // refused, or (had the pool kept a client the shutdown had not yet reached) terminated
        expect(err?.code ?? err?.message).toMatch(/^(ECONNREFUSED|57P01)$|Connection terminated/);
      } finally {
        await db.postgres!.start();
      }
      expect(await writeRecords(pool, records)).toBe(12);
      expect(await writeRecords(pool, records)).toBe(0);
      expect(await rowCounts('job-4')).toEqual([1, 2, 3, 1, 2]);
    });
  });
});
