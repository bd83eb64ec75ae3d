/** Hugging Face Trainer `checkpoint-N` directories (src/checkpoints/hf.ts), on real temp dirs. */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findCheckpoints, findLatestCheckpoint, pruneCheckpoints } from '../../src/checkpoints';
import { age, removeDir, tempDir } from './helpers';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => removeDir(dir));

/** What Trainer._save_checkpoint leaves, in its order: the model and optimizer, then the state (unless `state` is false). */
async function trainerCheckpoint(step: number, opts: { state?: string | false; secondsAgo?: number; name?: string } = {}): Promise<string> {
  const d = path.join(dir, opts.name ?? `checkpoint-${step}`);
  await mkdir(d, { recursive: true });
  await writeFile(path.join(d, 'config.json'), '{"model_type": "gpt2"}');
  await writeFile(path.join(d, 'model.safetensors'), Buffer.alloc(4096, 1));
  await writeFile(path.join(d, 'optimizer.pt'), Buffer.alloc(2048, 2));
  await writeFile(path.join(d, 'scheduler.pt'), Buffer.alloc(64, 3));
  await writeFile(path.join(d, 'rng_state.pth'), Buffer.alloc(64, 4));
  await writeFile(path.join(d, 'training_args.bin'), Buffer.alloc(64, 5));
  if (opts.state !== false) await writeFile(path.join(d, 'trainer_state.json'), opts.state ?? JSON.stringify({ global_step: step, epoch: step / 100, log_history: [] }));
  if (opts.secondsAgo !== undefined) await age(d, opts.secondsAgo);
  return d;
}

it('the newest complete checkpoint-N is the resume point; a newer one without trainer_state.json is skipped', async () => {
  await trainerCheckpoint(100, { secondsAgo: 300 });
  const complete = await trainerCheckpoint(200, { secondsAgo: 200 });
  const partial = await trainerCheckpoint(300, { state: false });
  const latest = await findLatestCheckpoint(dir);
  expect(latest.latest).toEqual({ path: complete, step: 200, time: expect.any(String), kind: 'hf' });
  expect(latest.skipped).toEqual([{ path: partial, step: 300, time: expect.any(String), reason: 'partial Hugging Face Trainer checkpoint (no trainer_state.json)' }]);
  expect((await findCheckpoints(dir)).complete.map((c) => c.step)).toEqual([200, 100]);
});

it('numbers, not names, order them: checkpoint-1000 is newer than checkpoint-999', async () => {
  await trainerCheckpoint(999);
  const newest = await trainerCheckpoint(1000, { secondsAgo: 60 }); // older on disk, higher step
  expect((await findLatestCheckpoint(dir)).latest?.path).toBe(newest);
});

it.each([
  ['cut short', '{"global_step": 300, "log_hist', 'partial Hugging Face Trainer checkpoint (trainer_state.json is not whole JSON)'],
  ['empty', '', 'partial Hugging Face Trainer checkpoint (trainer_state.json is empty)'],
])('a trainer_state.json %s is not complete: the one before is used', async (_, state, reason) => {
  const previous = await trainerCheckpoint(100, { secondsAgo: 100 });
  const bad = await trainerCheckpoint(200, { state });
  const scan = await findLatestCheckpoint(dir);
  expect(scan.latest?.path).toBe(previous);
  expect(scan.skipped).toEqual([expect.objectContaining({ path: bad, reason })]);
});

it("a checkpoint-N directory with none of Trainer's files is not ours: not reported, never pruned", async () => {
  const complete = await trainerCheckpoint(100, { secondsAgo: 100 });
  const notOurs = path.join(dir, 'checkpoint-50');
  await mkdir(notOurs);
  await writeFile(path.join(notOurs, 'notes.txt'), 'keep me');
  await age(notOurs, 500);
  const scan = await findCheckpoints(dir);
  expect(scan.latest?.path).toBe(complete);
  expect(scan.skipped).toEqual([]);
  await pruneCheckpoints(dir, 1);
  expect(await readdir(notOurs)).toEqual(['notes.txt']);
});

it('a torch.distributed.checkpoint directory named checkpoint-N stays a DCP checkpoint', async () => {
  const d = path.join(dir, 'checkpoint-40');
  await mkdir(d);
  await writeFile(path.join(d, '__0_0.distcp'), Buffer.alloc(128, 1));
  await writeFile(path.join(d, '.metadata'), Buffer.from([0x80, 0x04, 0x95]));
  expect((await findLatestCheckpoint(dir)).latest).toMatchObject({ path: d, step: 40, kind: 'dcp' });
});

it("Trainer's staging name tmp-checkpoint-N: a write in progress is ignored, a stale one reported", async () => {
  const complete = await trainerCheckpoint(100, { secondsAgo: 100 });
  const staging = await trainerCheckpoint(200, { name: 'tmp-checkpoint-200', state: false });
  let scan = await findCheckpoints(dir);
  expect(scan.latest?.path).toBe(complete);
  expect(scan.skipped).toEqual([]);
  await age(staging, 3600);
  scan = await findCheckpoints(dir);
  expect(scan.skipped).toEqual([expect.objectContaining({ path: staging, reason: 'stale temporary directory' })]);
});

it('pruning keeps the newest complete ones and never a newer partial one (it may still be written)', async () => {
  const oldest = await trainerCheckpoint(100, { secondsAgo: 300 });
  await trainerCheckpoint(200, { secondsAgo: 200 });
  const partial = await trainerCheckpoint(300, { state: false });
  const r = await pruneCheckpoints(dir, 1);
  expect(r.removed).toEqual([oldest]);
  expect((await readdir(dir)).sort()).toEqual(['checkpoint-200', 'checkpoint-300']);
  expect(path.join(dir, 'checkpoint-300')).toBe(partial);
});
