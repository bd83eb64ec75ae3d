/** Directories described by manifest.json (src/checkpoints/manifest.ts). */
import { appendFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { findCheckpoints } from '../../src/checkpoints';
import { manifestDir, removeDir, tempDir } from './helpers';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => removeDir(dir));

const files = { 'model.safetensors': 'weights!', 'optim/state.bin': 'moments', 'rng.json': '{}' };

async function onlySkipped(): Promise<[number | null, string]> {
  const scan = await findCheckpoints(dir);
  expect(scan.complete).toEqual([]);
  expect(scan.skipped).toHaveLength(1);
  return [scan.skipped[0]!.step, scan.skipped[0]!.reason];
}

it('takes a directory whose listed files all exist with their sizes as complete', async () => {
  const d = await manifestDir(path.join(dir, 'ckpt-30'), files);
  expect((await findCheckpoints(dir)).latest).toEqual({ path: d, step: 30, time: expect.any(String), kind: 'manifest' });
});

it("prefers the manifest's step over the name", async () => {
  const sizes = Object.entries(files).map(([p, c]) => ({ path: p, size: c.length }));
  await manifestDir(path.join(dir, 'ckpt-30'), files, { files: sizes, step: 1234, extra: { any: 'thing' } });
  expect((await findCheckpoints(dir)).latest?.step).toBe(1234);
});

it('skips one with a listed file missing, naming the first', async () => {
  const d = await manifestDir(path.join(dir, 'ckpt-30'), files);
  await rm(path.join(d, 'optim/state.bin'));
  await rm(path.join(d, 'rng.json'));
  expect(await onlySkipped()).toEqual([30, 'optim/state.bin listed in manifest is missing']);
});

it('skips one with a file of the wrong size', async () => {
  const d = await manifestDir(path.join(dir, 'ckpt-30'), files);
  await appendFile(path.join(d, 'model.safetensors'), '++');
  expect(await onlySkipped()).toEqual([30, 'model.safetensors has 10 bytes, manifest says 8']);
});

it('skips one whose manifest is not JSON (still being written, or damaged)', async () => {
  await manifestDir(path.join(dir, 'ckpt-30'), files, '{"files": [{"path": "model.safe');
  expect(await onlySkipped()).toEqual([30, 'manifest is not valid JSON']);
});

it('skips one whose manifest has the wrong shape, naming the field', async () => {
  await manifestDir(path.join(dir, 'ckpt-30'), files, { files: [{ path: 'model.safetensors', size: '8' }] });
  expect(await onlySkipped()).toEqual([30, 'manifest is malformed: files.0.size: Expected number, received string']);
});

it('skips one listing a path outside its directory', async () => {
  await manifestDir(path.join(dir, 'ckpt-30'), files, { files: [{ path: '../ckpt-29/model.safetensors', size: 8 }] });
  expect(await onlySkipped()).toEqual([30, 'manifest lists a path outside the checkpoint: ../ckpt-29/model.safetensors']);
});

it('orders manifest checkpoints by step, partial ones apart', async () => {
  await manifestDir(path.join(dir, 'ckpt-30'), files);
  await manifestDir(path.join(dir, 'ckpt-10'), files);
  const bad = await manifestDir(path.join(dir, 'ckpt-50'), files);
  await rm(path.join(bad, 'rng.json'));
  const scan = await findCheckpoints(dir);
  expect(scan.complete.map((c) => c.step)).toEqual([30, 10]);
  expect(scan.skipped.map((c) => c.step)).toEqual([50]);
});
