/**
 * The scan (src/checkpoints/scan.ts) on directories of 50,000 and 100,000 entries: the right
 * newest checkpoint, nothing skipped for want of file descriptors, and an event loop that keeps
 * answering while it runs (the agent's Temporal worker shares it).
 *
 * The checkpoints are hard links to one real torch.save file: linking 100,000 names takes
 * seconds where writing 100,000 files takes a minute on a shared disk, and the scan still
 * looks up, stats and opens every name on its own.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, linkSync, writeFileSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { findCheckpoints, findLatestCheckpoint } from '../../src/checkpoints';
import { lagDuring } from './lag';
import { makeFixtures, manifestDir, place, placeTruncated, removeDir, tempDir } from './helpers';

const CHECKPOINTS = 50_000;
const pad = (n: number) => String(n).padStart(6, '0');
const base = (p: string) => path.basename(p);

const fx = makeFixtures();
let root: string;
let dir: string;
let model: string;

/** ext4 allows 65,000 links to one file. */
const LINKS_PER_COPY = 20_000;

/**
 * `count` names made by `name(i)`, each a link to a copy of `model` (a fresh copy every
 * LINKS_PER_COPY). Synchronous: nothing else runs yet, and it is the fastest way.
 */
function link(count: number, name: (i: number) => string): void {
  let source = '';
  for (let i = 0; i < count; i++) {
    if (i % LINKS_PER_COPY === 0) {
      source = path.join(root, `source-${name(i)}`);
      copyFileSync(model, source);
    }
    linkSync(source, path.join(dir, name(i)));
  }
}

/** Newer than ckpt_049999.pt, none usable: what a scan must pass over, and report. */
const NEWER_BROKEN = [
  ['ckpt_050005', 'model.safetensors listed in manifest is missing'],
  ['step-050004', 'partial torch.distributed.checkpoint (no .metadata)'],
  ['ckpt_050002.pt', 'truncated or corrupt (no zip end record)'],
  ['ckpt_050001.pt', 'empty file'],
  ['ckpt_050000.pt', 'truncated or corrupt (no zip end record)'],
];

beforeAll(async () => {
  root = await tempDir();
  dir = path.join(root, 'ckpt');
  await mkdir(dir);
  model = await place(path.join(fx.dir, 'model.pt'), path.join(root, 'model.pt'));
  link(CHECKPOINTS, (i) => `ckpt_${pad(i)}.pt`);
  await placeTruncated(model, path.join(dir, 'ckpt_050000.pt'));
  await writeFile(path.join(dir, 'ckpt_050001.pt'), '');
  await writeFile(path.join(dir, 'ckpt_050002.pt'), Buffer.alloc(4096));
  await writeFile(path.join(dir, 'ckpt_050003.pt.tmp'), 'half'); // a write in progress
  await mkdir(path.join(dir, 'step-050004'));
  await writeFile(path.join(dir, 'step-050004', '__0_0.distcp'), 'x');
  await manifestDir(path.join(dir, 'ckpt_050005'), { 'model.safetensors': 'w' });
  await rm(path.join(dir, 'ckpt_050005', 'model.safetensors'));
  // Other names, some with higher digits: none is a checkpoint.
  await symlink(path.join(dir, 'ckpt_049999.pt'), path.join(dir, 'latest.pt'));
  for (const n of ['train.log', 'progress_099999.txt', 'notes.md', '.nfs0000000099999']) await writeFile(path.join(dir, n), 'x');
  await mkdir(path.join(dir, 'tensorboard_099999'));
  await writeFile(path.join(dir, 'tensorboard_099999', 'events.out'), 'x');
}, 300_000);

afterAll(async () => {
  await removeDir(root);
  await removeDir(fx.dir);
}, 120_000);


describe(`${CHECKPOINTS} checkpoints, newer broken ones, other names`, () => {
  it('finds ckpt_049999.pt, stopping there, and reports the newer broken ones', async () => {
    const { result, ms } = await lagDuring(() => findLatestCheckpoint(dir));
    console.log(`findLatestCheckpoint over ${CHECKPOINTS} checkpoints: ${ms} ms`);
    expect(result.latest).toEqual({ path: path.join(dir, 'ckpt_049999.pt'), step: 49_999, time: expect.any(String), kind: 'file' });
    expect(result.skipped.map((s) => [base(s.path), s.reason])).toEqual(NEWER_BROKEN);
  });

  it('lists every one as complete, none skipped for want of file descriptors', async () => {
    const { result: scan, ms } = await lagDuring(() => findCheckpoints(dir));
    console.log(`findCheckpoints over ${CHECKPOINTS} checkpoints: ${ms} ms`);
    expect(scan.latest?.path).toBe(path.join(dir, 'ckpt_049999.pt'));
    expect(scan.complete).toHaveLength(CHECKPOINTS);
    expect(scan.complete.every((c, i) => c.step === CHECKPOINTS - 1 - i && base(c.path) === `ckpt_${pad(c.step)}.pt`)).toBe(true);
    expect(scan.skipped.map((s) => [base(s.path), s.reason])).toEqual(NEWER_BROKEN);
  });

  it('still finds it when the process has run out of file descriptors for a while', async () => {
    // ulimit -n 256: the old scan (every entry at once) skipped 30,019 of 50,000 with EMFILE.
    const fixture = path.join(__dirname, 'fixtures', 'low-fd-scan.ts');
    const register = path.join(__dirname, '../temporal/fixtures/ts-register.js');
    const { stdout } = await promisify(execFile)('bash', ['-c', 'ulimit -n 256 && exec "$@"', 'bash', process.execPath, '-r', register, fixture, dir, '300', '4'], { timeout: 120_000 });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    const reasons: Record<string, number> = {};
    for (const [, r] of NEWER_BROKEN) reasons[r!] = (reasons[r!] ?? 0) + 1;
    expect(out).toEqual({ held: expect.any(Number), latest: 'ckpt_049999.pt', complete: CHECKPOINTS, reasons });
    expect(out.held).toBeGreaterThan(200);
  });
});

/** The lookup in a process of its own, as an agent runs it (fixtures/lag-scan.ts says why). */
async function scanElsewhere(mode: 'round' | 'latest'): Promise<{ latest: string | null; skippedTotal: number; ms: number; timerLagMs: number; loopDelayMs: number }> {
  const fixture = path.join(__dirname, 'fixtures', 'lag-scan.ts');
  const register = path.join(__dirname, '../temporal/fixtures/ts-register.js');
  const { stdout } = await promisify(execFile)(process.execPath, ['-r', register, fixture, dir, mode], { timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('100,000 entries', () => {
  const OTHERS = 50_000;

  beforeAll(() => {
    // Beside the checkpoints: per-rank logs (ignored by name) and fresh temporaries (stated).
    link(OTHERS / 2, (i) => `rank_${i}.log`);
    link(OTHERS / 2, (i) => `ckpt_${pad(i)}.pt.tmp`);
    writeFileSync(path.join(dir, 'README'), 'x');
  }, 300_000);

  it('keeps the event loop answering within 200 ms during the round lookup', async () => {
    const r = await scanElsewhere('round');
    console.log(`findCheckpoint over ${CHECKPOINTS + OTHERS + 13} entries: ${r.ms} ms, timer lag ${r.timerLagMs} ms, event loop delay ${r.loopDelayMs} ms`);
    expect(r.latest).toBe('ckpt_049999.pt');
    expect(r.skippedTotal).toBe(NEWER_BROKEN.length);
    expect(r.timerLagMs).toBeLessThan(200);
    expect(r.loopDelayMs).toBeLessThan(200);
  });

  it('and during the search for the newest alone', async () => {
    const r = await scanElsewhere('latest');
    console.log(`findLatestCheckpoint over ${CHECKPOINTS + OTHERS + 13} entries: ${r.ms} ms, timer lag ${r.timerLagMs} ms, event loop delay ${r.loopDelayMs} ms`);
    expect(r.latest).toBe('ckpt_049999.pt');
    expect(r.timerLagMs).toBeLessThan(200);
    expect(r.loopDelayMs).toBeLessThan(200);
  });
});
