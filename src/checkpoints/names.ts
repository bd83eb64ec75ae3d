/** What a directory entry's name says: temporary or not, a torch.save file or not, which step. */

const TEMP_SUFFIXES = ['.tmp', '.partial', '.incomplete'];

/**
 * Names that are never a checkpoint nor a leftover of one, so never reported nor pruned:
 * `.nfs*` is NFS's stand-in for a file deleted while still open (removing it breaks the reader).
 */
const HOUSEKEEPING = /^(\.nfs|\.DS_Store$|\.git(keep|ignore)$|\.keep$)/;

/** Regular files that are logs, notes or configuration beside the checkpoints, not checkpoints. */
const NOT_CHECKPOINT_EXT = new Set(['.log', '.txt', '.md', '.json', '.yaml', '.yml', '.toml', '.csv', '.lock', '.pid', '.out', '.err', '.py', '.sh']);

/** Extensions torch.save files usually carry; torch.save writes a zip archive. */
const TORCH_EXT = new Set(['.pt', '.pth', '.ckpt', '.bin']);

/** Extensions of other frameworks' weight and state files. */
const WEIGHTS_EXT = new Set(['.safetensors', '.h5', '.hdf5', '.keras', '.npz', '.npy', '.pkl', '.pickle', '.joblib', '.msgpack', '.onnx', '.gguf']);

/**
 * A checkpoint word followed by a step (`ckpt_120`, `step-40`, `global_step7`, `epoch=3`): a
 * name that promises a step without a known extension must say it is a checkpoint, so that
 * `notes`, `report.pdf` or `model-final` beside the checkpoints are never taken for one.
 */
const STEP_NAME = /(ckpt|checkpoint|step|epoch|iter)[-_.=]*\d/i;

/** A write in progress (or its leftover): `*.tmp`, `*.partial`, `*.incomplete`, `.name`, `tmp*`. */
export function isTempName(name: string): boolean {
  return name.startsWith('.') || name.startsWith('tmp') || TEMP_SUFFIXES.some((s) => name.endsWith(s));
}

export function isHousekeepingName(name: string): boolean {
  return HOUSEKEEPING.test(name);
}

function extension(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot).toLowerCase() : '';
}

export function isTorchFileName(name: string): boolean {
  return TORCH_EXT.has(extension(name));
}

/**
 * Whether a regular file's name is one a checkpoint has: a torch.save or weights extension
 * (`model.pt`, `pytorch_model.bin`, `step_7.safetensors`, `resnet.pth.tar`), or a step-numbered
 * checkpoint name (`step-40`, `ckpt.120`, `ckpt_00000003.state`). Only such files are read,
 * reported and pruned; anything else in the directory is left alone (it may not be ours: pruning
 * removes files).
 */
export function isCheckpointFileName(name: string): boolean {
  const ext = extension(name);
  if (NOT_CHECKPOINT_EXT.has(ext)) return false;
  if (TORCH_EXT.has(ext) || WEIGHTS_EXT.has(ext) || name.toLowerCase().endsWith('.pth.tar')) return true;
  return STEP_NAME.test(name);
}

/**
 * Whether a temporary file (isTempName) is the write in progress, or the leftover, of a file
 * checkpoint: its name without the temporary marks (`.`/`tmp` before, `.tmp`/`.partial`/
 * `.incomplete` after, a writer's random suffix after that) is a checkpoint's name:
 * `ckpt_40.pt.tmp`, `.ckpt_60.pt.XyZ12`, `tmp_step-3`. A stale `.bashrc` or `video.partial` is not.
 */
export function isCheckpointTempName(name: string): boolean {
  let stem = name.startsWith('.') ? name.slice(1) : name.startsWith('tmp') ? name.slice(3) : name;
  for (const s of TEMP_SUFFIXES) if (stem.endsWith(s)) stem = stem.slice(0, -s.length);
  if (stem === '') return false;
  if (isCheckpointFileName(stem)) return true;
  const dot = stem.lastIndexOf('.');
  return dot > 0 && isCheckpointFileName(stem.slice(0, dot));
}

/**
 * The last run of digits in a name, ignoring temporary suffixes and an extension that starts
 * with a letter (`weights.h5` has no step): `ckpt_00000120.pt` → 120, `step-40` → 40,
 * `ckpt_120.pt.tmp` → 120, `model.pt` → null.
 */
export function stepFromName(name: string): number | null {
  let stem = name;
  for (const s of TEMP_SUFFIXES) if (stem.endsWith(s)) stem = stem.slice(0, -s.length);
  stem = stem.replace(/(.)\.[A-Za-z][A-Za-z0-9]*$/, '$1');
  const runs = stem.match(/\d+/g);
  if (!runs) return null;
  const step = Number(runs[runs.length - 1]);
  return Number.isSafeInteger(step) ? step : null;
}
