/** The findCheckpoint activity (src/checkpoints/activities.ts), called directly and as an activity. */
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createCheckpointActivities, REPORT_LIST_CAP, type CheckpointLogger, type CheckpointReport, type FindCheckpointInput } from '../../src/checkpoints';
import { age, removeDir, tempDir } from './helpers';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => removeDir(dir));

function recordingLog(): CheckpointLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (_f, msg) => void lines.push(`info ${msg}`), warn: (f, msg) => void lines.push(`warn ${msg} ${(f as { reason?: string }).reason}`) };
}

/** `n` complete checkpoints (steps 1..n, older steps older) and `bad` old empty ones. */
async function fill(n: number, bad = 0): Promise<void> {
  for (let s = 1; s <= n; s++) {
    await writeFile(path.join(dir, `ckpt_${s}.safetensors`), 'w');
    await age(path.join(dir, `ckpt_${s}.safetensors`), 1000 - s);
  }
  for (let s = 1; s <= bad; s++) {
    await writeFile(path.join(dir, `broken_${s}.safetensors`), '');
    await age(path.join(dir, `broken_${s}.safetensors`), 2000);
  }
}

it('without keep: the latest checkpoint and what was skipped above it, nothing older read, nothing pruned', async () => {
  await fill(3, 1);
  await writeFile(path.join(dir, 'broken_9.safetensors'), '');
  const log = recordingLog();
  const report = await createCheckpointActivities({ log }).findCheckpoint({ jobId: 'job1', dir });
  expect(report).toEqual({
    latest: { path: path.join(dir, 'ckpt_3.safetensors'), step: 3, time: expect.any(String), kind: 'file' },
    // broken_1 is older than ckpt_3: a lookup that stops at the newest never reads it.
    skipped: [{ path: path.join(dir, 'broken_9.safetensors'), step: 9, reason: 'empty file', time: expect.any(String) }],
    skippedTotal: 1,
    pruned: [],
    prunedTotal: 0,
  });
  expect(log.lines).toEqual(['warn checkpoint skipped empty file', 'info checkpoint found']);
  expect(await readdir(dir)).toHaveLength(5);
});

it('prunes to keep and caps both lists for the workflow history', async () => {
  await fill(30, 25);
  const report = await createCheckpointActivities().findCheckpoint({ jobId: 'job1', dir, keep: 3 });
  expect(report.latest?.step).toBe(30);
  expect(report.skipped).toHaveLength(REPORT_LIST_CAP);
  expect(report.skippedTotal).toBe(25);
  expect(report.pruned).toHaveLength(REPORT_LIST_CAP);
  expect(report.prunedTotal).toBe(27 + 25);
  expect((await readdir(dir)).sort()).toEqual(['ckpt_28.safetensors', 'ckpt_29.safetensors', 'ckpt_30.safetensors']);
});

it('returns an empty report for a directory not written yet', async () => {
  const report = await createCheckpointActivities().findCheckpoint({ jobId: 'job1', dir: path.join(dir, 'nope'), keep: 2 });
  expect(report).toEqual({ latest: null, skipped: [], skippedTotal: 0, pruned: [], prunedTotal: 0 });
});

/** A Temporal logger that records `level message` (and keeps the test output quiet). */
function temporalLog(lines: string[]): Logger {
  const at = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  return { log: (level, message) => void lines.push(`${level} ${message}`), trace: at('TRACE'), debug: at('DEBUG'), info: at('INFO'), warn: at('WARN'), error: at('ERROR') };
}

it("fails without retries on a bad keep or a checkpoint dir that is a file, and logs to the activity's logger", async () => {
  const lines: string[] = [];
  const env = new MockActivityEnvironment(undefined, { logger: temporalLog(lines) });
  const { findCheckpoint } = createCheckpointActivities();
  await fill(1);
  await expect(env.run(findCheckpoint, { jobId: 'job1', dir, keep: 0 })).rejects.toMatchObject({ type: 'InvalidKeepError', nonRetryable: true });
  const file = path.join(dir, 'ckpt_1.safetensors');
  await expect(env.run(findCheckpoint, { jobId: 'job1', dir: file })).rejects.toMatchObject({ type: 'CheckpointDirError', nonRetryable: true });
  const report = await env.run<[FindCheckpointInput], CheckpointReport, typeof findCheckpoint>(findCheckpoint, { jobId: 'job1', dir, keep: 1 });
  expect(report.latest?.step).toBe(1);
  expect(lines).toContain('INFO checkpoint found');
});

describe('waitForCheckpoint', () => {
  const wait = (baseline: { path: string; step: number | null; time: string; kind: 'file' } | null, timeoutMs: number) =>
    new MockActivityEnvironment().run(createCheckpointActivities({ log: recordingLog() }).waitForCheckpoint, { jobId: 'j', dir, baseline, requestedAt: Date.now(), timeoutMs, pollMs: 20 });

  test('returns the first complete checkpoint newer than the baseline, once it appears', async () => {
    await fill(3);
    const { latest } = await createCheckpointActivities().findCheckpoint({ jobId: 'j', dir });
    const waiting = wait(latest as never, 5000);
    await new Promise((r) => setTimeout(r, 150));
    await writeFile(path.join(dir, 'ckpt_4.safetensors'), 'w');
    await expect(waiting).resolves.toMatchObject({ path: path.join(dir, 'ckpt_4.safetensors'), step: 4 });
  });

  test('null when none came within the timeout; the baseline itself does not count', async () => {
    await fill(2);
    const { latest } = await createCheckpointActivities().findCheckpoint({ jobId: 'j', dir });
    const t0 = Date.now();
    await expect(wait(latest as never, 300)).resolves.toBeNull();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
  });
});
