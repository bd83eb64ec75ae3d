/**
 * A checkpoint that is one regular file, written to a temporary name and renamed: the final
 * name appears only once the write is done, so a non-empty file under it is complete — unless
 * it was truncated afterwards (a full disk during a copy), which the zip end record reveals.
 */
import { open } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { isTorchFileName, stepFromName } from './names';
import { firstByte, hasZipEndRecord, startsLikeZip } from './zip';
import type { Verdict } from './types';

const PICKLE_PROTO = 0x80;

/** Why a torch.save file is unusable, or null when it looks whole. */
async function torchFileProblem(path: string, size: number): Promise<string | null> {
  const fh = await open(path, 'r');
  try {
    if (await startsLikeZip(fh)) return (await hasZipEndRecord(fh, size)) ? null : 'truncated or corrupt (no zip end record)';
    // torch.save before 1.6 (or with _use_new_zipfile_serialization=False) writes a bare pickle,
    // which has no end marker to check.
    if ((await firstByte(fh)) === PICKLE_PROTO) return null;
    return 'truncated or corrupt (no zip end record)';
  } finally {
    await fh.close();
  }
}

export async function inspectFile(path: string, name: string, st: Stats): Promise<Verdict> {
  const step = stepFromName(name);
  const time = st.mtime.toISOString();
  const skip = (reason: string): Verdict => ({ state: 'skipped', entry: { path, reason, step, time } });
  if (st.size === 0) return skip('empty file');
  if (isTorchFileName(name)) {
    const problem = await torchFileProblem(path, st.size);
    if (problem) return skip(problem);
  }
  return { state: 'complete', info: { path, step, time, kind: 'file' } };
}
