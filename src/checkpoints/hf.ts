/**
 * A Hugging Face Trainer checkpoint: `<output_dir>/checkpoint-<global step>/`, holding the model
 * (`model.safetensors`, `pytorch_model.bin`, adapters…), `optimizer.pt`, `scheduler.pt`,
 * `rng_state*.pth`, `training_args.bin`, and `trainer_state.json`, which `Trainer._save_checkpoint`
 * writes after the model and optimizer: present and readable, the checkpoint is complete (as
 * `get_last_checkpoint` and `resume_from_checkpoint` take it). Some versions stage the write in
 * `tmp-checkpoint-<step>` and rename it; that name is a temporary one (names.ts).
 */
import type { Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { CheckpointInfo, Verdict } from './types';

export const TRAINER_STATE = 'trainer_state.json';

/** Trainer's own name (transformers' PREFIX_CHECKPOINT_DIR), or its staging name. */
const NAME = /^(tmp-)?checkpoint-\d+$/;

/**
 * Files only a Trainer checkpoint holds together; one of them marks a `checkpoint-N` directory
 * as Trainer's (a directory of that name with none of them is not ours, and is never pruned).
 */
const TRAINER_FILES = new Set([
  TRAINER_STATE, 'training_args.bin', 'optimizer.pt', 'scheduler.pt', 'scaler.pt', 'rng_state.pth',
  'model.safetensors', 'model.safetensors.index.json', 'pytorch_model.bin', 'pytorch_model.bin.index.json',
  'adapter_model.safetensors', 'adapter_model.bin', 'adapter_config.json',
]);

/** The state file is read to check it is whole; past this size its presence is taken as enough. */
const MAX_STATE_BYTES = 16 * 1024 * 1024;

/** Whether a directory of this name holding these entries is a Trainer checkpoint (finished or not). */
export function looksLikeTrainer(name: string, entries: string[]): boolean {
  return NAME.test(name) && entries.some((n) => TRAINER_FILES.has(n) || /^rng_state_\d+\.pth$/.test(n));
}

/** `stats` holds the directory's direct entries by name; `base` its path, step and time. */
export async function inspectTrainer(dir: string, stats: Map<string, Stats>, base: Omit<CheckpointInfo, 'kind'>): Promise<Verdict> {
  const skip = (reason: string): Verdict => ({ state: 'skipped', entry: { ...base, reason } });
  const st = stats.get(TRAINER_STATE);
  if (!st || !st.isFile()) return skip(`partial Hugging Face Trainer checkpoint (no ${TRAINER_STATE})`);
  if (st.size === 0) return skip(`partial Hugging Face Trainer checkpoint (${TRAINER_STATE} is empty)`);
  if (st.size <= MAX_STATE_BYTES) {
    try {
      JSON.parse(await readFile(path.join(dir, TRAINER_STATE), 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== undefined) throw err; // an I/O error: the caller's to judge
      return skip(`partial Hugging Face Trainer checkpoint (${TRAINER_STATE} is not whole JSON)`);
    }
  }
  return { state: 'complete', info: { ...base, kind: 'hf' } };
}
