/**
 * Ledger figures, printed, not asserted: the embedded PGlite against a real PostgreSQL 15.
 *   open      hostEmbeddedLedger in a fresh process: first on an empty directory (initdb), then on
 *             the same one again; wall time and the process's RSS growth
 *   write     writeRecords of one job's 12 records per batch, one batch at a time and 4 at once
 *             (through a pool of 4 connections), as records per second
 * PostgreSQL is DATABASE_URL when set, else a throwaway cluster (as the tests start it).
 * Usage: node lib/bench/ledger.js [--batches 200]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { hostEmbeddedLedger } from '../src/ledger/embedded';
import { migrate } from '../src/ledger/migrate';
import { writeRecords } from '../src/ledger/store';
import { jobRecords } from '../test/ledger/records';
import { startPostgres } from '../test/setup/postgres';

const argv = process.argv.slice(2);
const BATCHES = Number(argv.includes('--batches') ? argv[argv.indexOf('--batches') + 1] : '200');

/** In a child process: host the ledger at `dir`, print {openMs, rssMb}, close. */
async function openOnce(dir: string): Promise<void> {
  const rss = process.memoryUsage().rss;
  const started = Date.now();
  const ledger = await hostEmbeddedLedger(dir);
  const figures = { openMs: Date.now() - started, rssMb: Math.round((process.memoryUsage().rss - rss) / 1e6) };
  await ledger.close();
  console.log(JSON.stringify(figures));
}

function openInChild(dir: string): { openMs: number; rssMb: number } {
  const child = spawnSync(process.execPath, [...process.execArgv, __filename, '--open', dir], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`open ${dir}: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!);
}

/** Records per second of BATCHES batches, `parallel` at a time. */
async function throughput(pool: pg.Pool, label: string, parallel: number): Promise<number> {
  const started = Date.now();
  for (let b = 0; b < BATCHES; b += parallel) {
    await Promise.all(Array.from({ length: Math.min(parallel, BATCHES - b) }, (_, i) => writeRecords(pool, jobRecords(`${label}-${parallel}-${b + i}`))));
  }
  return Math.round((BATCHES * 12) / ((Date.now() - started) / 1000));
}

async function main(): Promise<void> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'telastic-bench-ledger-'));
  const postgres = process.env.DATABASE_URL ? null : await startPostgres();
  try {
    const dir = path.join(root, 'ledger');
    const first = openInChild(dir);
    const again = openInChild(dir);
    console.log(`PGlite open, empty dir (initdb): ${first.openMs} ms, RSS +${first.rssMb} MB`);
    console.log(`PGlite open, existing dir:       ${again.openMs} ms, RSS +${again.rssMb} MB`);

    const embedded = await hostEmbeddedLedger(dir);
    const server = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? postgres!.url, max: 4 });
    try {
      await migrate(server);
      for (const [name, pool] of [['PGlite', embedded.pool], ['PostgreSQL', server]] as const) {
        const one = await throughput(pool, name, 1);
        const four = await throughput(pool, name, 4);
        console.log(`${name.padEnd(10)} writeRecords (12 per batch, ${BATCHES} batches): ${one} records/s one at a time, ${four} records/s 4 at once`);
      }
    } finally {
      await server.end();
      await embedded.close();
    }
  } finally {
    await postgres?.destroy();
    rmSync(root, { recursive: true, force: true });
  }
}

const run = argv[0] === '--open' ? openOnce(argv[1]!) : main();
run.catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
