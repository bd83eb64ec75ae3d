/**
 * The direct entries of the checkpoint dir, ordered by what they promise before any is opened:
 * the step in the name (for a directory with a manifest, the manifest's step), highest first.
 * The scan then verifies them in that order and stops at the first complete one.
 */
import { opendir } from 'node:fs/promises';
import path from 'node:path';
import { mapBounded, sortSliced } from './bounded';
import { CheckpointDirError, CheckpointScanError, isTransient } from './errors';
import { manifestStep } from './manifest';
import { isCheckpointFileName, isCheckpointTempName, isHousekeepingName, isTempName, stepFromName } from './names';
import { retryTransient } from './retry';

/** At most this many entries are read at once, by the scan and by pruning. */
export const SCAN_CONCURRENCY = 16;

export interface Candidate {
  name: string;
  /** The step it would have if complete (-1: none, which ranks below every step). */
  promise: number;
}

export interface Listing {
  /** Entries that may be a complete checkpoint, highest promise first. */
  candidates: Candidate[];
  /** Temporary files and directories: never complete, but a stale one is reported (and pruned). */
  temps: string[];
}

/** Entries read from the directory per call: small batches keep each callback's work short. */
const DIRENT_BATCH = 1024;

/** Sorts every direct entry of `root` into files, directories and temporaries as they are read. */
async function classify(root: string): Promise<{ files: Candidate[]; dirs: Candidate[]; temps: string[] }> {
  const files: Candidate[] = [];
  const dirs: Candidate[] = [];
  const temps: string[] = [];
  // opendir rather than readdir: readdir hands over 100,000 names in one callback, which held
  // the event loop for ~90 ms on a loaded machine; opendir hands them over a batch at a time.
  for await (const e of await opendir(root, { bufferSize: DIRENT_BATCH })) {
    const name = e.name;
    if (isHousekeepingName(name) || !(e.isFile() || e.isDirectory())) continue;
    // A temporary directory is judged by what it holds (dir.ts), a temporary file by its name.
    if (isTempName(name)) {
      if (e.isDirectory() || isCheckpointTempName(name)) temps.push(name);
    } else if (e.isDirectory()) dirs.push({ name, promise: stepFromName(name) ?? -1 });
    else if (isCheckpointFileName(name)) files.push({ name, promise: stepFromName(name) ?? -1 });
  }
  return { files, dirs, temps };
}

/**
 * Symbolic links, sockets and the like are left out here, as inspectEntry would ignore them;
 * so are housekeeping names and files not named like a checkpoint (names.ts). Null when the
 * directory does not exist (no checkpoint written yet); CheckpointDirError when it cannot be
 * listed.
 */
export async function listCandidates(root: string): Promise<Listing | null> {
  let listed: Awaited<ReturnType<typeof classify>>;
  try {
    listed = await retryTransient(() => classify(root));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new CheckpointDirError(root, code, err);
  }
  const { files, dirs, temps } = listed;
  // A manifest's step wins over the name, so it must be known before ordering (one small read
  // per directory; a directory without a manifest costs one failed open).
  await mapBounded(dirs, SCAN_CONCURRENCY, async (d) => {
    const full = path.join(root, d.name);
    try {
      const step = await retryTransient(() => manifestStep(full));
      if (step !== null) d.promise = step;
    } catch (err) {
      if (isTransient(err)) throw new CheckpointScanError(full, (err as NodeJS.ErrnoException).code, err);
      throw err;
    }
  });
  const candidates = await sortSliced(files.concat(dirs), (a, b) => b.promise - a.promise);
  return { candidates, temps };
}
