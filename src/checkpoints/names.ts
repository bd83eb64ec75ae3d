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

export function isNotCheckpointFileName(name: string): boolean {
  return NOT_CHECKPOINT_EXT.has(extension(name));
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
