/** Pruning (src/checkpoints/prune.ts): the pure plan, then on real files. */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findCheckpoints, InvalidKeepError, planPrune, pruneCheckpoints, type CheckpointInfo, type Scan, type SkippedCheckpoint } from '../../src/checkpoints';
import { age, makeFixtures, manifestDir, place, placeTruncated, removeDir, tempDir } from './helpers';

const t = (minutesAgo: number) => new Date(Date.UTC(2025, 0, 1, 12, 0) - minutesAgo * 60_000).toISOString();
const ok = (step: number | null, minutesAgo: number): CheckpointInfo => ({ path: `/c/ok-${step}-${minutesAgo}`, step, time: t(minutesAgo), kind: 'file' });
const bad = (step: number | null, minutesAgo: number): SkippedCheckpoint => ({ path: `/c/bad-${step}-${minutesAgo}`, step, time: t(minutesAgo), reason: 'x' });
const scanOf = (complete: CheckpointInfo[], skipped: SkippedCheckpoint[] = []): Scan => ({ latest: complete[0] ?? null, complete, skipped });

describe('planPrune', () => {
  it('keeps the newest K complete and removes the older ones', () => {
    const scan = scanOf([ok(40, 1), ok(30, 2), ok(20, 3), ok(10, 4)]);
    expect(planPrune(scan, 2)).toEqual(['/c/ok-20-3', '/c/ok-10-4']);
    expect(planPrune(scan, 4)).toEqual([]);
    expect(planPrune(scan, 10)).toEqual([]);
  });

  it('removes skipped entries older than the newest complete one, never newer ones', () => {
    const scan = scanOf([ok(40, 10)], [bad(50, 1), bad(60, 20), bad(30, 5), bad(30, 20), bad(null, 20), bad(null, 5), bad(40, 11)]);
    // bad(50, 1): newer in both ways; bad(60, 20): a later step (a slow write); bad(30, 5), bad(null, 5): written after the newest.
    expect(planPrune(scan, 1)).toEqual(['/c/bad-30-20', '/c/bad-null-20', '/c/bad-40-11']);
  });

  it('removes nothing when there is no complete checkpoint', () => {
    expect(planPrune(scanOf([], [bad(10, 60), bad(null, 600)]), 1)).toEqual([]);
  });

  it('keeps a step-less complete file written after the newest (a final model, say)', () => {
    expect(planPrune(scanOf([ok(40, 10), ok(30, 20), ok(null, 1), ok(null, 30)]), 1)).toEqual(['/c/ok-30-20', '/c/ok-null-30']);
  });

  it.each([0, -1, 1.5, NaN])('rejects keep %p', (keep) => {
    expect(() => planPrune(scanOf([ok(1, 1)]), keep)).toThrow(InvalidKeepError);
    expect(() => planPrune(scanOf([ok(1, 1)]), keep)).toThrow(`keep ${keep}: must be a whole number of at least 1`);
  });
});

describe('pruneCheckpoints', () => {
  const fx = makeFixtures();
  const model = path.join(fx.dir, 'model.pt');
  let dir: string;
  afterAll(() => removeDir(fx.dir));
  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(() => removeDir(dir));

  it('keeps the K newest files and removes the rest', async () => {
    for (const step of [20, 40, 60, 80, 100]) await place(model, path.join(dir, `ckpt_${String(step).padStart(8, '0')}.pt`), 1000 - step);
    const { removed, failed } = await pruneCheckpoints(dir, 2);
    expect(removed.map((p) => path.basename(p))).toEqual(['ckpt_00000060.pt', 'ckpt_00000040.pt', 'ckpt_00000020.pt']);
    expect(failed).toEqual([]);
    expect((await readdir(dir)).sort()).toEqual(['ckpt_00000080.pt', 'ckpt_00000100.pt']);
  });

  it('removes old partial and stale entries recursively, but none newer than the newest complete one', async () => {
    await place(model, path.join(dir, 'ckpt_00000040.pt'), 600);
    await placeTruncated(model, path.join(dir, 'ckpt_00000020.pt'));
    await age(path.join(dir, 'ckpt_00000020.pt'), 900);
    const oldPartial = await manifestDir(path.join(dir, 'step-30'), { 'a.bin': 'aaaa' });
    await rm(path.join(oldPartial, 'a.bin'));
    await age(oldPartial, 800);
    await writeFile(path.join(dir, 'ckpt_00000010.pt.tmp'), 'x');
    await age(path.join(dir, 'ckpt_00000010.pt.tmp'), 3600);
    // Newer than ckpt 40: a DCP save still in progress, and a truncated file at a later step.
    await mkdir(path.join(dir, 'step-60'));
    await writeFile(path.join(dir, 'step-60', '__0_0.distcp'), 'x');
    await placeTruncated(model, path.join(dir, 'ckpt_00000050.pt'));
    await writeFile(path.join(dir, 'ckpt_00000070.pt.tmp'), 'x');

    const { removed } = await pruneCheckpoints(dir, 1);
    expect(removed.map((p) => path.basename(p)).sort()).toEqual(['ckpt_00000010.pt.tmp', 'ckpt_00000020.pt', 'step-30']);
    expect((await readdir(dir)).sort()).toEqual(['ckpt_00000040.pt', 'ckpt_00000050.pt', 'ckpt_00000070.pt.tmp', 'step-60']);
    expect(existsSync(path.join(dir, 'step-60', '__0_0.distcp'))).toBe(true);
  });

  it('removes whole checkpoint directories', async () => {
    await manifestDir(path.join(dir, 'ckpt-1'), { 'w/a.bin': 'a', 'w/b.bin': 'b' });
    await age(path.join(dir, 'ckpt-1'), 100);
    await manifestDir(path.join(dir, 'ckpt-2'), { 'w/a.bin': 'a' });
    expect(await pruneCheckpoints(dir, 1)).toEqual({ removed: [path.join(dir, 'ckpt-1')], failed: [] });
    expect(await readdir(dir)).toEqual(['ckpt-2']);
  });

  it('does nothing in a missing directory or one without a complete checkpoint', async () => {
    expect(await pruneCheckpoints(path.join(dir, 'none'), 1)).toEqual({ removed: [], failed: [] });
    await placeTruncated(model, path.join(dir, 'ckpt_1.pt'));
    await age(path.join(dir, 'ckpt_1.pt'), 3600);
    expect(await pruneCheckpoints(dir, 1)).toEqual({ removed: [], failed: [] });
    expect((await findCheckpoints(dir)).skipped).toHaveLength(1);
  });

  it('removes only what is named like a checkpoint: old notes, documents and dotfiles beside them stay', async () => {
    const theirs = ['notes', 'report.pdf', '.bashrc', 'model-final', 'video.partial', 'tmpab12cd34', 'thesis2024.docx'];
    for (const f of theirs) {
      await writeFile(path.join(dir, f), 'theirs');
      await age(path.join(dir, f), 2 * 86_400);
    }
    await place(model, path.join(dir, 'ckpt_00000001.pt'), 86_400);
    await writeFile(path.join(dir, 'step-2'), 'w');
    await age(path.join(dir, 'step-2'), 3600);
    await writeFile(path.join(dir, '.ckpt_00000003.pt.XyZ12'), 'half');
    await age(path.join(dir, '.ckpt_00000003.pt.XyZ12'), 3600);
    await place(model, path.join(dir, 'ckpt_00000004.pt'));
    const { removed } = await pruneCheckpoints(dir, 1);
    expect(removed.map((p) => path.basename(p)).sort()).toEqual(['.ckpt_00000003.pt.XyZ12', 'ckpt_00000001.pt', 'step-2']);
    expect((await readdir(dir)).sort()).toEqual([...theirs, 'ckpt_00000004.pt'].sort());
  });

  it('rejects keep 0 before touching anything', async () => {
    await place(model, path.join(dir, 'ckpt_1.pt'));
    await expect(pruneCheckpoints(dir, 0)).rejects.toBeInstanceOf(InvalidKeepError);
    expect(await readdir(dir)).toEqual(['ckpt_1.pt']);
  });
});
