/** findCheckpoints on files written the way train.py writes them (src/checkpoints/scan.ts). */
import { mkdir, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CheckpointDirError, findCheckpoints, findLatestCheckpoint } from '../../src/checkpoints';
import { age, makeFixtures, manifestDir, place, placeTruncated, removeDir, tempDir } from './helpers';

const fx = makeFixtures();
const made = fx.torch ? 'torch.save' : 'zipfile (no torch in .venv)';
let dir: string;

afterAll(() => removeDir(fx.dir));
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => removeDir(dir));

const model = () => path.join(fx.dir, 'model.pt');
const names = (infos: { path: string }[]) => infos.map((i) => path.basename(i.path));

describe('atomically renamed files', () => {
  it('picks the highest step, whatever the mtimes', async () => {
    await place(model(), path.join(dir, 'ckpt_00000040.pt'), 300);
    await place(model(), path.join(dir, 'ckpt_00000120.pt'), 200);
    await place(model(), path.join(dir, 'ckpt_00000080.pt'), 100);
    const scan = await findCheckpoints(dir);
    expect(scan.latest).toEqual({ path: path.join(dir, 'ckpt_00000120.pt'), step: 120, time: expect.any(String), kind: 'file' });
    expect(names(scan.complete)).toEqual(['ckpt_00000120.pt', 'ckpt_00000080.pt', 'ckpt_00000040.pt']);
    expect(scan.skipped).toEqual([]);
  });

  it('orders equal and missing steps by mtime, after every stepped one', async () => {
    await place(model(), path.join(dir, 'model.pt'), 10);
    await place(model(), path.join(dir, 'best.pt'), 5);
    await place(model(), path.join(dir, 'a-step-3.pt'), 100);
    await place(model(), path.join(dir, 'b-step-3.pt'), 50);
    const scan = await findCheckpoints(dir);
    expect(names(scan.complete)).toEqual(['b-step-3.pt', 'a-step-3.pt', 'best.pt', 'model.pt']);
    expect(scan.complete.map((c) => c.step)).toEqual([3, 3, null, null]);
  });

  it('reports the file mtime as ISO time', async () => {
    await place(model(), path.join(dir, 'ckpt_1.pt'));
    const t = new Date('2024-05-01T10:00:00.000Z');
    await utimes(path.join(dir, 'ckpt_1.pt'), t, t);
    expect((await findCheckpoints(dir)).latest?.time).toBe('2024-05-01T10:00:00.000Z');
  });

  it('finds what train.py writes: torch.save to .tmp, then os.replace', async () => {
    await place(model(), path.join(dir, 'ckpt_00000020.pt.tmp'));
    expect((await findCheckpoints(dir)).latest).toBeNull();
    await rename(path.join(dir, 'ckpt_00000020.pt.tmp'), path.join(dir, 'ckpt_00000020.pt'));
    expect((await findCheckpoints(dir)).latest?.step).toBe(20);
  });
});

describe('temporary files', () => {
  it('ignores a fresh .tmp, even at a higher step', async () => {
    await place(model(), path.join(dir, 'ckpt_00000020.pt'), 60);
    await placeTruncated(model(), path.join(dir, 'ckpt_00000040.pt.tmp'));
    await writeFile(path.join(dir, '.ckpt_00000060.pt.XyZ12'), 'half');
    await writeFile(path.join(dir, 'tmpa8k2'), 'half');
    await writeFile(path.join(dir, 'ckpt_00000080.partial'), 'half');
    const scan = await findCheckpoints(dir);
    expect(scan.latest?.step).toBe(20);
    expect(scan.complete).toHaveLength(1);
    expect(scan.skipped).toEqual([]);
  });

  it('skips one older than 10 minutes as a stale temporary file', async () => {
    await placeTruncated(model(), path.join(dir, 'ckpt_00000040.pt.tmp'));
    await age(path.join(dir, 'ckpt_00000040.pt.tmp'), 11 * 60);
    const scan = await findCheckpoints(dir);
    expect(scan.latest).toBeNull();
    expect(scan.skipped).toEqual([{ path: path.join(dir, 'ckpt_00000040.pt.tmp'), reason: 'stale temporary file', step: 40, time: expect.any(String) }]);
  });

  it('takes the staleness limit as an option', async () => {
    await writeFile(path.join(dir, 'ckpt_9.pt.tmp'), 'half');
    await age(path.join(dir, 'ckpt_9.pt.tmp'), 30);
    expect((await findCheckpoints(dir, { staleTempMs: 10_000 })).skipped).toHaveLength(1);
  });
});

describe('corrupt files', () => {
  it(`skips a truncated torch.save file (written by ${made})`, async () => {
    await place(model(), path.join(dir, 'ckpt_00000020.pt'), 60);
    await placeTruncated(model(), path.join(dir, 'ckpt_00000040.pt'));
    const scan = await findCheckpoints(dir);
    expect(scan.latest?.step).toBe(20);
    expect(scan.skipped).toEqual([{ path: path.join(dir, 'ckpt_00000040.pt'), reason: 'truncated or corrupt (no zip end record)', step: 40, time: expect.any(String) }]);
  });

  it('checks the zip end record for .pth, .ckpt and .bin too', async () => {
    for (const ext of ['pth', 'ckpt', 'bin']) await placeTruncated(model(), path.join(dir, `s${ext.length}.${ext}`));
    const scan = await findCheckpoints(dir);
    expect(scan.complete).toEqual([]);
    expect(scan.skipped.map((s) => s.reason)).toEqual(Array(3).fill('truncated or corrupt (no zip end record)'));
  });

  it('skips a torch file that is neither zip nor pickle, and an empty file', async () => {
    await writeFile(path.join(dir, 'ckpt_3.pt'), Buffer.alloc(4096));
    await writeFile(path.join(dir, 'ckpt_4.pt'), '');
    const scan = await findCheckpoints(dir);
    expect(scan.skipped.map((s) => [s.step, s.reason])).toEqual([
      [4, 'empty file'],
      [3, 'truncated or corrupt (no zip end record)'],
    ]);
  });

  it('accepts a legacy (pickle) torch.save file, which has no end record to check', async () => {
    await writeFile(path.join(dir, 'ckpt_5.pt'), Buffer.from([0x80, 0x02, 0x8a, 0x0a, 1, 2, 3]));
    expect((await findCheckpoints(dir)).latest?.step).toBe(5);
  });

  it('takes other extensions as complete when non-empty', async () => {
    await writeFile(path.join(dir, 'step_7.safetensors'), 'x');
    await writeFile(path.join(dir, 'step_8.safetensors'), '');
    const scan = await findCheckpoints(dir);
    expect(scan.latest).toMatchObject({ step: 7, kind: 'file' });
    expect(scan.skipped).toMatchObject([{ step: 8, reason: 'empty file' }]);
  });
});

describe('what is not a checkpoint', () => {
  it('ignores logs, notes, symlinks, housekeeping files and unrelated directories', async () => {
    await place(model(), path.join(dir, 'ckpt_00000020.pt'));
    await symlink(path.join(dir, 'ckpt_00000020.pt'), path.join(dir, 'latest.pt'));
    await writeFile(path.join(dir, 'progress_999.txt'), '1 2 3');
    await writeFile(path.join(dir, 'train.log'), 'step 900');
    await writeFile(path.join(dir, '.nfs0000000001'), 'x');
    await age(path.join(dir, '.nfs0000000001'), 3600);
    await mkdir(path.join(dir, 'tensorboard_900'));
    await writeFile(path.join(dir, 'tensorboard_900', 'events.out'), 'x');
    const scan = await findCheckpoints(dir);
    expect(names(scan.complete)).toEqual(['ckpt_00000020.pt']);
    expect(scan.skipped).toEqual([]);
  });

  it('gives an empty scan for a missing or empty directory', async () => {
    expect(await findCheckpoints(path.join(dir, 'not-yet'))).toEqual({ latest: null, complete: [], skipped: [] });
    expect(await findCheckpoints(dir)).toEqual({ latest: null, complete: [], skipped: [] });
  });

  it('throws CheckpointDirError when the path is a file', async () => {
    await writeFile(path.join(dir, 'file'), 'x');
    await expect(findCheckpoints(path.join(dir, 'file'))).rejects.toMatchObject({ name: 'CheckpointDirError', code: 'ENOTDIR' });
    await expect(findCheckpoints(path.join(dir, 'file'))).rejects.toBeInstanceOf(CheckpointDirError);
  });

  it('resolves a relative directory to absolute paths', async () => {
    await place(model(), path.join(dir, 'ckpt_1.pt'));
    const scan = await findCheckpoints(path.relative(process.cwd(), dir));
    expect(scan.latest?.path).toBe(path.join(dir, 'ckpt_1.pt'));
  });
});

describe('findLatestCheckpoint', () => {
  it('stops at the newest complete one: older broken entries are not read, newer ones are reported', async () => {
    await placeTruncated(model(), path.join(dir, 'ckpt_00000010.pt'));
    await place(model(), path.join(dir, 'ckpt_00000020.pt'));
    await writeFile(path.join(dir, 'ckpt_00000030.pt'), '');
    const latest = await findLatestCheckpoint(dir);
    expect(latest.latest?.path).toBe(path.join(dir, 'ckpt_00000020.pt'));
    expect(latest.skipped.map((s) => [s.step, s.reason])).toEqual([[30, 'empty file']]);
    expect((await findCheckpoints(dir)).skipped.map((s) => s.step)).toEqual([30, 10]);
  });

  it("ranks a directory by its manifest's step, whatever its name promises", async () => {
    await place(model(), path.join(dir, 'ckpt_00000200.pt'));
    await manifestDir(path.join(dir, 'final'), { 'w.bin': 'w' }, { files: [{ path: 'w.bin', size: 1 }], step: 500 });
    await manifestDir(path.join(dir, 'ckpt-3'), { 'w.bin': 'w' }, { files: [{ path: 'w.bin', size: 1 }], step: 400 });
    expect((await findLatestCheckpoint(dir)).latest).toMatchObject({ path: path.join(dir, 'final'), step: 500, kind: 'manifest' });
    await rm(path.join(dir, 'final', 'w.bin'));
    expect((await findLatestCheckpoint(dir)).latest).toMatchObject({ path: path.join(dir, 'ckpt-3'), step: 400 });
  });

  it('reads every entry of the newest step, as their times break the tie', async () => {
    await place(model(), path.join(dir, 'a-step-3.pt'), 100);
    await place(model(), path.join(dir, 'b-step-3.pt'), 50);
    await place(model(), path.join(dir, 'c-step-3.pt'), 200);
    expect((await findLatestCheckpoint(dir)).latest?.path).toBe(path.join(dir, 'b-step-3.pt'));
  });

  it('gives nothing for a missing directory, and throws CheckpointDirError for a file', async () => {
    expect(await findLatestCheckpoint(path.join(dir, 'not-yet'))).toEqual({ latest: null, skipped: [] });
    await writeFile(path.join(dir, 'file'), 'x');
    await expect(findLatestCheckpoint(path.join(dir, 'file'))).rejects.toMatchObject({ name: 'CheckpointDirError', code: 'ENOTDIR' });
  });
});
