/** torch.distributed.checkpoint directories (src/checkpoints/dcp.ts, dir.ts). */
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findCheckpoints } from '../../src/checkpoints';
import { age, makeFixtures, place, removeDir, tempDir } from './helpers';

const fx = makeFixtures();
let dir: string;
afterAll(() => removeDir(fx.dir));
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => removeDir(dir));

/** A DCP directory: the one dcp.save wrote when torch is there, else the same layout by hand. */
async function dcpDir(dest: string, secondsAgo?: number): Promise<string> {
  if (fx.torch) await place(path.join(fx.dir, 'dcp'), dest);
  else {
    await mkdir(dest, { recursive: true });
    await writeFile(path.join(dest, '__0_0.distcp'), Buffer.alloc(2048, 1));
    await writeFile(path.join(dest, '.metadata'), Buffer.from([0x80, 0x04, 0x95]));
  }
  if (secondsAgo !== undefined) await age(dest, secondsAgo);
  return dest;
}

(fx.torch ? it : it.skip)('the fixture is what torch.distributed.checkpoint.save writes', async () => {
  expect((await readdir(path.join(fx.dir, 'dcp'))).sort()).toEqual(['.metadata', '__0_0.distcp']);
});

it('takes a directory with .metadata as complete, stepped by its name', async () => {
  await dcpDir(path.join(dir, 'step-40'), 100);
  await dcpDir(path.join(dir, 'step-60'), 50);
  const scan = await findCheckpoints(dir);
  expect(scan.latest).toEqual({ path: path.join(dir, 'step-60'), step: 60, time: expect.any(String), kind: 'dcp' });
  expect(scan.complete.map((c) => c.step)).toEqual([60, 40]);
});

it('dates a directory by its newest file', async () => {
  const d = await dcpDir(path.join(dir, 'step-1'), 3600);
  const t = new Date();
  await writeFile(path.join(d, '__1_0.distcp'), 'x');
  const time = Date.parse((await findCheckpoints(dir)).latest!.time);
  expect(Math.abs(time - t.getTime())).toBeLessThan(5000);
});

it('skips one whose .metadata is missing (ranks still writing, or a writer that died)', async () => {
  await dcpDir(path.join(dir, 'step-40'), 100);
  const partial = await dcpDir(path.join(dir, 'step-60'));
  await rm(path.join(partial, '.metadata'));
  const scan = await findCheckpoints(dir);
  expect(scan.latest?.step).toBe(40);
  expect(scan.skipped).toEqual([{ path: partial, reason: 'partial torch.distributed.checkpoint (no .metadata)', step: 60, time: expect.any(String) }]);
});

it('skips one with only .metadata.tmp (the coordinator mid-rename) or an empty .metadata', async () => {
  const a = await dcpDir(path.join(dir, 'step-1'));
  await rename(path.join(a, '.metadata'), path.join(a, '.metadata.tmp'));
  const b = await dcpDir(path.join(dir, 'step-2'));
  await writeFile(path.join(b, '.metadata'), '');
  const scan = await findCheckpoints(dir);
  expect(scan.latest).toBeNull();
  expect(scan.skipped.map((s) => [s.step, s.reason])).toEqual([
    [2, 'partial torch.distributed.checkpoint (.metadata is empty)'],
    [1, 'partial torch.distributed.checkpoint (no .metadata)'],
  ]);
});

it('ignores a DCP directory under a temporary name until it is stale', async () => {
  const d = await dcpDir(path.join(dir, 'step-80.tmp'));
  expect(await findCheckpoints(dir)).toEqual({ latest: null, complete: [], skipped: [] });
  await age(d, 11 * 60);
  expect((await findCheckpoints(dir)).skipped).toMatchObject([{ path: d, reason: 'stale temporary directory', step: 80 }]);
});

it('ignores directories that hold no checkpoint, even under temporary names', async () => {
  for (const name of ['tmp', '.cache', 'step-9-logs']) {
    await mkdir(path.join(dir, name));
    await writeFile(path.join(dir, name, 'x.bin'), 'x');
    await age(path.join(dir, name), 3600);
  }
  expect(await findCheckpoints(dir)).toEqual({ latest: null, complete: [], skipped: [] });
});
