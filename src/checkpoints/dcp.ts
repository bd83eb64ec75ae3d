/**
 * A `torch.distributed.checkpoint` directory as its FileSystemWriter lays it out: every rank
 * writes `__<rank>_<n>.distcp`, then the coordinator writes `.metadata.tmp` and renames it to
 * `.metadata` — last, so `.metadata` present means the checkpoint is complete. (Without rank
 * coordination each rank writes its own `__<rank>.metadata`; from outside we cannot tell how
 * many ranks there were, so such a directory is not taken as complete.)
 */
import type { Stats } from 'node:fs';
import type { CheckpointInfo, Verdict } from './types';

export const DCP_METADATA = '.metadata';

/** Whether the listing looks like DCP at all (finished or not). */
export function looksLikeDcp(names: string[]): boolean {
  return names.some((n) => n === DCP_METADATA || n === `${DCP_METADATA}.tmp` || n.endsWith('.distcp'));
}

/** `stats` holds the directory's direct entries by name; `base` its path, step and time. */
export function inspectDcp(stats: Map<string, Stats>, base: Omit<CheckpointInfo, 'kind'>): Verdict {
  const skip = (reason: string): Verdict => ({ state: 'skipped', entry: { ...base, reason } });
  const meta = stats.get(DCP_METADATA);
  if (!meta || !meta.isFile()) return skip('partial torch.distributed.checkpoint (no .metadata)');
  if (meta.size === 0) return skip('partial torch.distributed.checkpoint (.metadata is empty)');
  return { state: 'complete', info: { ...base, kind: 'dcp' } };
}
