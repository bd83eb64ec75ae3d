/**
 * Which of two checkpoints is newer, for a checkpoint-first drain (src/job/preempt.ts): the
 * node's `waitForCheckpoint` activity (activities.ts) polls until one newer than the request is
 * complete. Pure.
 */
import type { CheckpointInfo } from './types';

type Seen = Pick<CheckpointInfo, 'path' | 'step' | 'time'>;

/**
 * Whether `found` is a checkpoint written after the request: newer than `baseline` (the newest
 * one when the workers were asked) by step when both have one, else by time. Without a baseline,
 * any checkpoint written at or after the request counts (the directory's clock against the
 * workflow's: both are this cluster's clocks).
 */
export function isNewerCheckpoint(found: Seen | null, baseline: Seen | null, requestedAt: number): boolean {
  if (!found) return false;
  if (!baseline) return Date.parse(found.time) >= requestedAt;
  if (found.path === baseline.path) return false;
  if (found.step !== null && baseline.step !== null) return found.step > baseline.step;
  return Date.parse(found.time) > Date.parse(baseline.time);
}
