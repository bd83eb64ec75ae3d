/** Reading an entry again when it failed for a reason that passes (src/checkpoints/errors.ts). */
import { setTimeout as sleep } from 'node:timers/promises';
import { isTransient } from './errors';

/** Waits between attempts: about 0.8 s in all, long enough for a burst of open files to close. */
export const RETRY_DELAYS_MS = [20, 50, 100, 200, 400];

/** `fn()`, tried again after each transient failure; the last failure (or any other) is thrown. */
export async function retryTransient<R>(fn: () => Promise<R>, delays: readonly number[] = RETRY_DELAYS_MS): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransient(err) || attempt >= delays.length) throw err;
      await sleep(delays[attempt]);
    }
  }
}
