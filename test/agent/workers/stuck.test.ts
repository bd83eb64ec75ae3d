/**
 * Workers the group cannot end: one that ignores SIGTERM is SIGKILLed after the shutdown timeout;
 * a process held in a frozen cgroup (state D) survives SIGKILL, and the group ends without it
 * after the kill wait, reporting its pid, instead of waiting for ever. Real processes, a real
 * cgroup v1 freezer (test-support/freezer.ts), removed after each test whatever happened.
 */
import { writeFileSync } from 'fs';
import { join } from 'path';
import { describeStuck, startWorkerGroup, Std, type GroupOptions, type WorkerSpec } from '../../../src/agent/workers';
import { createFreezer, type Freezer } from '../../../test-support/freezer';
import { alive, captureConsole, readWhenWritten, removeTempDirs, shWorker, tempDir } from '../helpers';

function group(workers: WorkerSpec[], extra: Partial<GroupOptions> = {}) {
  const { console } = captureConsole();
  return startWorkerGroup({ workers, shutdownTimeoutMs: 300, killWaitMs: 500, monitorIntervalMs: 20, output: { redirects: Std.NONE, tee: Std.NONE, console }, ...extra });
}

describe('describeStuck', () => {
  it('names every pid, the wait and the states in one line', () => {
    expect(describeStuck({ processes: [{ pid: 1234, state: 'D' }, { pid: 1235, state: 'D' }], afterKillMs: 30_000, pgids: [1234] })).toBe('workers 1234, 1235 did not exit 30 s after SIGKILL (state D)');
    expect(describeStuck({ processes: [{ pid: 7, state: 'D' }], afterKillMs: 5_000, pgids: [7] })).toBe('worker 7 did not exit 5 s after SIGKILL (state D)');
    expect(describeStuck({ processes: [{ pid: 7, state: 'D' }, { pid: 9, state: 'R' }], afterKillMs: 1_500, pgids: [7] })).toBe('workers 7, 9 did not exit 1.5 s after SIGKILL (states D, R)');
  });
});

let freezer: Freezer | null = null;
afterEach(async () => {
  await freezer?.remove();
  freezer = null;
});
afterAll(removeTempDirs);

it('a worker that ignores SIGTERM is killed after the shutdown timeout and is not stuck', async () => {
  const dir = tempDir();
  const g = group([shWorker(0, `trap '' TERM; echo ready > ${dir}/ready; while :; do sleep 1; done`)]);
  await readWhenWritten(join(dir, 'ready'));
  const t0 = Date.now();
  await g.stop('test');
  expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
  const r = await g.wait();
  expect(r.exits.map((e) => e.signal)).toEqual(['SIGKILL']);
  expect(r.stuck).toBeUndefined();
});

it('a grandchild in a frozen cgroup survives SIGKILL: the group ends after the kill wait and names it', async () => {
  freezer = createFreezer('group');
  const dir = tempDir();
  const untracked: number[] = [];
  const reaper = { track: () => undefined, untrack: (pgid: number) => void untracked.push(pgid), close: async () => undefined };
  const g = group([
    shWorker(0, `trap '' TERM; sleep 1000 & echo $! > ${dir}/gc; while :; do sleep 1; done`),
    shWorker(1, 'sleep 1000'),
  ], { reaper });
  const held = Number(await readWhenWritten(join(dir, 'gc')));
  await freezer.freeze(held);
  const t0 = Date.now();
  await g.stop('test');
  const took = Date.now() - t0;
  const r = await g.wait();
  // SIGTERM, SIGKILL after 300 ms, given up 500 ms later; never the 5 s the leaders' exits may take.
  expect(took).toBeGreaterThanOrEqual(800);
  expect(took).toBeLessThan(4_000);
  expect(r).toMatchObject({ state: 'stopped', stuck: { processes: [{ pid: held, state: 'D' }], afterKillMs: 500, pgids: [g.pids[0]] } });
  // The worker itself died of the SIGKILL; only the held process is left.
  expect(r.exits.map((e) => e.signal)).toEqual(['SIGKILL', 'SIGTERM']);
  expect(alive(held)).toBe(true);
  // The stuck group stays with the reaper (killed again if the agent dies); the other is forgotten.
  expect(untracked).toEqual([g.pids[1]]);
  expect(describeStuck(r.stuck!)).toBe(`worker ${held} did not exit 0.5 s after SIGKILL (state D)`);
});

it('a failed group reports its stuck process beside the failure', async () => {
  freezer = createFreezer('failed');
  const dir = tempDir();
  const g = group([shWorker(0, `sleep 1000 & echo $! > ${dir}/gc; while [ ! -e ${dir}/go ]; do sleep 0.05; done; exit 4`)]);
  const held = Number(await readWhenWritten(join(dir, 'gc')));
  await freezer.freeze(held);
  writeFileSync(join(dir, 'go'), '');
  const r = await g.wait();
  expect(r).toMatchObject({ state: 'failed', failure: { exitCode: 4 }, stuck: { processes: [{ pid: held, state: 'D' }] } });
});
