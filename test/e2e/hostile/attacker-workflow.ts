/**
 * A submitter's own workflow (test only): it schedules one activity of its choosing, by name, on
 * any task queue, with any input. Open-source Temporal lets anyone who may start a workflow in
 * the namespace do this, so a pool agent's node queue must hold against it.
 */
import { proxyActivities } from '@temporalio/workflow';

export async function attack(taskQueue: string, activity: string, input: unknown, timeoutMs: number): Promise<unknown> {
  const acts = proxyActivities<Record<string, (i: unknown) => Promise<unknown>>>({
    taskQueue,
    scheduleToCloseTimeout: timeoutMs,
    retry: { maximumAttempts: 1 },
  });
  return acts[activity](input);
}
