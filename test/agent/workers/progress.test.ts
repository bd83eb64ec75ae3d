/**
 * --progress-timeout: real worker processes that write their step to TELASTIC_PROGRESS_FILE, and
 * one node that stops writing (a hang) is killed with a message naming its ranks.
 */
import { join } from 'path';
import { startWorkerGroup, Std, type GroupOptions, type WorkerSpec } from '../../../src/agent/workers';
import { watchProgress } from '../../../src/agent/workers/progress';
import { describeFailure } from '../../../src/job/decide';
import { alive, captureConsole, removeTempDirs, shWorker, tempDir } from '../helpers';
import { writeFileSync } from 'fs';

afterAll(removeTempDirs);

function group(workers: WorkerSpec[], extra: Partial<GroupOptions> = {}) {
  const { console } = captureConsole();
  return startWorkerGroup({ workers, shutdownTimeoutMs: 2_000, monitorIntervalMs: 20, output: { redirects: Std.NONE, tee: Std.NONE, console }, ...extra });
}

/** A worker that reports steps 1..n every 100 ms, then does `then`. */
function stepper(dir: string, localRank: number, steps: number, then: string): WorkerSpec {
  const file = join(dir, `progress_${localRank}`);
  const loop = `i=1; while [ $i -le ${steps} ]; do echo $i > "$TELASTIC_PROGRESS_FILE"; sleep 0.1; i=$((i+1)); done; ${then}`;
  return shWorker(localRank, loop, { TELASTIC_PROGRESS_FILE: file });
}

test('ranks that stop reporting are killed after the timeout; the failure names them and the last step', async () => {
  const dir = tempDir();
  // Both hang after step 5 (a collective that never returns); neither ignores SIGTERM here, but
  // the kill is SIGKILL, as a hung rank deserves.
  const g = group([stepper(dir, 0, 5, 'sleep 1000'), stepper(dir, 1, 5, 'sleep 1000')], { progressTimeoutMs: 1_000 });
  const t0 = Date.now();
  const r = await g.wait();
  const took = Date.now() - t0;
  if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
  expect(r.failure.signal).toBe('SIGKILL');
  expect(r.failure.message).toMatch(/^no progress from ranks 10, 11 for 1 s \(--progress-timeout; last step 5 1(\.\d)? s ago\)$/);
  // Said once, without "killed by SIGKILL": the agent's own account of the kill.
  expect(describeFailure({ nodeId: 'b', ...r.failure })).toBe(`rank ${r.failure.rank} on node b: ${r.failure.message}`);
  expect(took).toBeGreaterThanOrEqual(1_400); // 5 steps of 0.1 s, then the timeout
  expect(took).toBeLessThan(10_000);
  for (const pid of g.pids) expect(alive(pid)).toBe(false);
});

test('one rank reporting is enough: a node whose rank 0 writes steps is not hung', async () => {
  const dir = tempDir();
  const g = group([stepper(dir, 0, 25, 'exit 0'), shWorker(1, 'sleep 2.5', { TELASTIC_PROGRESS_FILE: join(dir, 'progress_1') })], { progressTimeoutMs: 1_000 });
  const r = await g.wait();
  expect(r.state).toBe('succeeded');
  expect(g.progress?.()).toMatchObject({ step: 25 });
});

test('without a timeout nothing is killed, and the newest report is there for the status', async () => {
  const dir = tempDir();
  const g = group([stepper(dir, 0, 3, 'sleep 1.5')]);
  const r = await g.wait();
  expect(r.state).toBe('succeeded');
  const p = g.progress?.();
  expect(p?.step).toBe(3);
  expect(p?.ageMs).toBeGreaterThanOrEqual(1_000);
});

test('a node that never reports is hung once the timeout passed since its start', async () => {
  const dir = tempDir();
  const g = group([shWorker(0, 'sleep 1000', { TELASTIC_PROGRESS_FILE: join(dir, 'progress_0') })], { progressTimeoutMs: 500 });
  const r = await g.wait();
  if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
  expect(r.failure.message).toBe('no progress from rank 10 for 0.5 s (--progress-timeout; none reported since the workers started)');
});

test('--progress-start-timeout: a slow start is not a hang; after the first report the shorter timeout applies', async () => {
  const dir = tempDir();
  // Quiet for 1.5 s (importing torch, loading a checkpoint), then steps, then a hang.
  const steps = stepper(dir, 0, 3, 'sleep 1000');
  const slow: WorkerSpec = { ...steps, args: ['-c', `sleep 1.5; ${steps.args[1]}`] };
  const g = group([slow], { progressTimeoutMs: 500, progressStartTimeoutMs: 5_000 });
  const r = await g.wait();
  if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
  expect(r.failure.message).toMatch(/^no progress from rank 10 for 0\.5 s \(--progress-timeout; last step 3 (0\.\d|1(\.\d)?) s ago\)$/);
});

test('--progress-start-timeout: workers that never report are hung once it passed, and the message names it', async () => {
  const dir = tempDir();
  const g = group([shWorker(0, 'sleep 1000', { TELASTIC_PROGRESS_FILE: join(dir, 'progress_0') })], { progressTimeoutMs: 60_000, progressStartTimeoutMs: 600 });
  const r = await g.wait();
  if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
  expect(r.failure.message).toBe('no progress from rank 10 for 0.6 s (--progress-start-timeout; none reported since the workers started)');
});

test('a file left from before the workers started is not progress', () => {
  const dir = tempDir();
  const file = join(dir, 'p');
  writeFileSync(file, '7');
  const w = watchProgress({ files: [{ rank: 0, file }], startedAt: Date.now() + 5_000, onHung: () => {} });
  expect(w.report()).toMatchObject({ ageMs: null, step: null });
  w.stop();
});
