/**
 * Bounded, polite I/O for directories of any size: at most `limit` operations in flight (so a
 * directory of 50,000 checkpoints never exhausts file descriptors nor floods libuv's thread pool),
 * and CPU work cut into slices that give the event loop back (the agent's Temporal worker
 * answers heartbeats and workflow tasks on that loop).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Entries handled per synchronous slice; ~1 ms of name parsing on a loaded 2-core box. */
export const SLICE = 1000;

/**
 * Run `fn` over `items` with at most `limit` calls in flight, in order of index, and return the
 * results by index. `stop(i)` is asked before item `i` is started: once true, nothing from `i`
 * on starts (the caller's order is newest first, so later items can only be older).
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  stop: (index: number) => boolean = () => false,
): Promise<(R | undefined)[]> {
  const results: (R | undefined)[] = new Array(items.length);
  let next = 0;
  let stopped = false;
  async function worker(): Promise<void> {
    while (!stopped && next < items.length) {
      if (stop(next)) {
        stopped = true;
        return;
      }
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** `fn` over every item, SLICE at a time, yielding to the event loop between slices. */
export async function eachSliced<T>(items: readonly T[], fn: (item: T) => void): Promise<void> {
  for (let start = 0; start < items.length; start += SLICE) {
    if (start > 0) await nextTurn();
    const end = Math.min(items.length, start + SLICE);
    for (let i = start; i < end; i++) fn(items[i]!);
  }
}

/**
 * A sorted copy of `items` (stable), that gives the event loop back every few thousand steps:
 * Array.prototype.sort over 100,000 entries holds the loop for a quarter of a second on a loaded
 * machine. Runs of SLICE are sorted natively, then merged pairwise.
 */
export async function sortSliced<T>(items: readonly T[], cmp: (a: T, b: T) => number): Promise<T[]> {
  const n = items.length;
  let src = items.slice();
  for (let start = 0; start < n; start += SLICE) {
    if (start > 0) await nextTurn();
    const run = src.slice(start, start + SLICE).sort(cmp);
    for (let i = 0; i < run.length; i++) src[start + i] = run[i]!;
  }
  let dst = new Array<T>(n);
  let steps = 0;
  for (let width = SLICE; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        dst[k] = j >= hi || (i < mid && cmp(src[i]!, src[j]!) <= 0) ? src[i++]! : src[j++]!;
        if (++steps % (SLICE * 5) === 0) await nextTurn();
      }
    }
    [src, dst] = [dst, src];
  }
  return src;
}
