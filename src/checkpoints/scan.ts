/**
 * Find the newest complete checkpoint in a directory, and what was skipped on the way.
 *
 * Polite at any size: entries are ordered by the step their names promise, then verified at
 * most SCAN_CONCURRENCY at a time, newest first, stopping once no unverified entry can be newer
 * than the best complete one. An entry that fails for a passing reason (EMFILE, ENFILE, a stale
 * NFS handle) is read again; if it still fails the scan throws rather than answer with an older
 * checkpoint. A vanished entry is ignored; a corrupt one is skipped with its reason.
 */
import path from 'node:path';
import { eachSliced, mapBounded, sortSliced } from './bounded';
import { CheckpointScanError, isTransient } from './errors';
import { inspectEntry } from './entry';
import { listCandidates, SCAN_CONCURRENCY, type Candidate, type Listing } from './list';
import { stepFromName } from './names';
import { retryTransient } from './retry';
import type { CheckpointInfo, LatestScan, Scan, ScanOptions, SkippedCheckpoint, Verdict } from './types';

export const DEFAULT_STALE_TEMP_MS = 10 * 60_000;

/**
 * Newest first: the higher step wins; entries without a step rank below every stepped one;
 * equal steps (and step-less entries among themselves) go by newest time, then by path.
 */
export function newestFirst<T extends Pick<CheckpointInfo, 'path' | 'step' | 'time'>>(a: T, b: T): number {
  const sa = a.step ?? -1;
  const sb = b.step ?? -1;
  if (sa !== sb) return sb - sa;
  const ta = Date.parse(a.time);
  const tb = Date.parse(b.time);
  if (ta !== tb) return tb - ta;
  return a.path < b.path ? 1 : a.path > b.path ? -1 : 0;
}

/** newestFirst's order, each time parsed once rather than per comparison, in slices. */
async function sortNewestFirst<T extends Pick<CheckpointInfo, 'path' | 'step' | 'time'>>(items: T[]): Promise<T[]> {
  const keyed: { item: T; step: number; ms: number }[] = [];
  await eachSliced(items, (item) => void keyed.push({ item, step: item.step ?? -1, ms: Date.parse(item.time) }));
  const sorted = await sortSliced(keyed, (a, b) => b.step - a.step || b.ms - a.ms || (a.item.path < b.item.path ? 1 : a.item.path > b.item.path ? -1 : 0));
  return sorted.map((k) => k.item);
}

type Stale = (mtimeMs: number) => boolean;

/**
 * `inspectEntry`, retried while it fails for a passing reason. One that stays unreadable is
 * reported when `beaten` (a complete checkpoint newer than it is known), dated now so that
 * pruning (which removes only what is older than the newest) leaves it; otherwise it might be
 * the newest, and the scan throws rather than answer with an older one.
 */
async function inspectPatiently(root: string, name: string, stale: Stale, beaten: () => boolean): Promise<Verdict> {
  try {
    return await retryTransient(() => inspectEntry(root, name, stale));
  } catch (err) {
    if (!isTransient(err)) throw err;
    const full = path.join(root, name);
    const code = (err as NodeJS.ErrnoException).code;
    if (!beaten()) throw new CheckpointScanError(full, code, err);
    return { state: 'skipped', entry: { path: full, reason: `cannot read (${code})`, step: stepFromName(name), time: new Date().toISOString() } };
  }
}

interface Walk {
  latest: CheckpointInfo | null;
  /** By candidate index; undefined for those not reached. */
  verdicts: (Verdict | undefined)[];
}

/** Strictly newer: entries promising the same step are all read, as their times break the tie. */
function beats(latest: CheckpointInfo | null, c: Candidate): boolean {
  return latest !== null && c.promise < (latest.step ?? -1);
}

/** Verify candidates newest first until none left can beat the best complete one. */
async function walk(root: string, listing: Listing, stale: Stale): Promise<Walk> {
  const { candidates } = listing;
  let latest: CheckpointInfo | null = null;
  const verdicts = await mapBounded(
    candidates,
    SCAN_CONCURRENCY,
    async (c) => {
      const v = await inspectPatiently(root, c.name, stale, () => beats(latest, c));
      if (v.state === 'complete' && (!latest || newestFirst(v.info, latest) < 0)) latest = v.info;
      return v;
    },
    (i) => beats(latest, candidates[i]!),
  );
  return { latest, verdicts };
}

function staleSince(options: ScanOptions): Stale {
  const staleTempMs = options.staleTempMs ?? DEFAULT_STALE_TEMP_MS;
  const scanStarted = (options.now ?? Date.now)();
  return (mtimeMs) => scanStarted - mtimeMs > staleTempMs;
}

/**
 * Only the newest complete checkpoint, and the unusable entries ranked at or above it: stops at
 * the first complete one, so it costs a listing and a few reads however many are older.
 * A missing directory holds nothing; one that cannot be listed throws CheckpointDirError.
 */
export async function findLatestCheckpoint(dir: string, options: ScanOptions = {}): Promise<LatestScan> {
  const root = path.resolve(dir);
  const listing = await listCandidates(root);
  if (!listing) return { latest: null, skipped: [] };
  const { latest, verdicts } = await walk(root, listing, staleSince(options));
  const floor = latest ? (latest.step ?? -1) : -Infinity;
  const skipped: SkippedCheckpoint[] = [];
  for (const v of verdicts) if (v?.state === 'skipped' && (v.entry.step ?? -1) >= floor) skipped.push(v.entry);
  return { latest, skipped: await sortNewestFirst(skipped) };
}

/**
 * Every complete checkpoint and every unusable entry (for pruning and the report): the newest
 * is found first as findLatestCheckpoint finds it, then the older entries are read, still
 * bounded, so trouble among them cannot change which one is the newest.
 * A missing directory holds nothing; one that cannot be listed throws CheckpointDirError.
 */
export async function findCheckpoints(dir: string, options: ScanOptions = {}): Promise<Scan> {
  const root = path.resolve(dir);
  const listing = await listCandidates(root);
  if (!listing) return { latest: null, complete: [], skipped: [] };
  const stale = staleSince(options);
  const { verdicts } = await walk(root, listing, stale);
  // What the walk did not reach is older than the newest, and temporaries are never complete:
  // none of them can be the newest, so one that stays unreadable is reported, not thrown.
  const rest = listing.candidates.filter((_, i) => verdicts[i] === undefined).map((c) => c.name).concat(listing.temps);
  const older = await mapBounded(rest, SCAN_CONCURRENCY, (name) => inspectPatiently(root, name, stale, () => true));
  const complete: CheckpointInfo[] = [];
  const skipped: SkippedCheckpoint[] = [];
  for (const v of [...verdicts, ...older]) {
    if (v?.state === 'complete') complete.push(v.info);
    else if (v?.state === 'skipped') skipped.push(v.entry);
  }
  const sorted = await sortNewestFirst(complete);
  return { latest: sorted[0] ?? null, complete: sorted, skipped: await sortNewestFirst(skipped) };
}
