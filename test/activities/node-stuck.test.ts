/**
 * Node activities and workers SIGKILL did not end (src/agent/workers/stuck.ts): runWorkers reports
 * them, and while one lives `prepare` and `runWorkers` fail with WORKERS_STUCK naming the pids, so
 * no round starts beside them; once they are gone the node serves rounds again. The group is a
 * stand-in (an interface this project owns); the "stuck" pid is a real `sleep`, so liveness is real.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createNodeActivities } from '../../activities/node';
import { WORKERS_STUCK } from '../../activities/types';
import type { GroupResult, Reaper, WorkerGroup } from '../../src/agent/workers/types';
import type { RoundAssignment } from '../../src/job/assignment';

const runDir = mkdtempSync(path.join(os.tmpdir(), 'telastic-node-stuck-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(runDir, { recursive: true, force: true });
});

const assignment: RoundAssignment = {
  jobId: 'job1', round: 2, nodeId: 'n1', role: 'default', groupRank: 0, groupWorldSize: 1, rankOffset: 0,
  localWorldSize: 1, worldSize: 1, masterAddr: '127.0.0.1', masterPort: 29500, restartCount: 0, maxRestarts: 3,
  heartbeatIntervalMs: 100,
};

async function sleeper(): Promise<ChildProcess> {
  const c = spawn('sleep', ['600'], { stdio: 'ignore' });
  children.push(c);
  await new Promise((r) => c.once('spawn', r));
  return c;
}

/** A stand-in group per round started: `end(result)` ends the latest; its `stop()` ends it with `onStop(reason)`. */
function groups(onStop: (reason: string) => GroupResult) {
  let end: (r: GroupResult) => void = () => undefined;
  let started = 0;
  const startGroup = (): WorkerGroup => {
    started++;
    const done = new Promise<GroupResult>((resolve) => (end = resolve));
    return { pids: [], wait: () => done, stop: async (reason?: string) => end(onStop(reason ?? '')) };
  };
  return { startGroup, end: (r: GroupResult) => end(r), started: () => started };
}

/** What the node told the reaper (an interface this project owns). */
const untracked: number[] = [];
const reaper: Reaper = { track: () => undefined, untrack: (pgid) => void untracked.push(pgid), close: async () => undefined };

function node(startGroup: () => WorkerGroup) {
  return createNodeActivities({
    nodeId: 'n1', entrypoint: { script: 'train.py', args: [], module: false, noPython: false }, bindAddress: '127.0.0.1',
    output: { redirects: 0, tee: 0 }, shutdownTimeoutMs: 1000, baseEnv: { PATH: '/usr/bin' }, runDir, log: pino({ level: 'silent' }), startGroup, reaper,
  });
}

const waitUntil = async (ok: () => boolean) => {
  for (const end = Date.now() + 10_000; !ok(); await new Promise((r) => setTimeout(r, 10))) if (Date.now() > end) throw new Error('timed out');
};
const prepare = (n: ReturnType<typeof node>, round: number) => new MockActivityEnvironment().run(n.activities.prepare, { jobId: 'job1', round, nodeId: 'n1' });

it('a failed round with a stuck process reports the node stuck; prepare refuses until the process is gone', async () => {
  const held = await sleeper();
  const pid = held.pid!;
  const g = groups((reason) => ({ state: 'stopped', reason, exits: [] }));
  const n = node(g.startGroup);
  const run = new MockActivityEnvironment().run(n.activities.runWorkers, assignment);
  await waitUntil(() => g.started() === 1);
  expect(n.stuck()).toBeNull();
  const failure = { localRank: 0, rank: 0, pid: 1, exitCode: 1, signal: null, message: 'boom', timestamp: 0 };
  g.end({ state: 'failed', failure, exits: [], stuck: { processes: [{ pid, state: 'D' }], afterKillMs: 30_000, pgids: [pid] } });
  const line = `worker ${pid} did not exit 30 s after SIGKILL (state D)`;
  await expect(run).resolves.toEqual({ state: 'stuck', message: line });
  expect(n.stuck()).toBe(`node n1: ${line}`);

  const refused = await prepare(n, 3).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ApplicationFailure);
  expect(refused).toMatchObject({ type: WORKERS_STUCK, message: line, nonRetryable: true });
  // runWorkers refuses as well (a round scheduled without a prepare of this node).
  await expect(new MockActivityEnvironment().run(n.activities.runWorkers, { ...assignment, round: 3 })).rejects.toMatchObject({ type: WORKERS_STUCK });
  expect(g.started()).toBe(1);

  // It ended at last (the hung device came back): the node serves rounds again, and the reaper
  // forgets its group (the id may be reused), which it kept until then.
  expect(untracked).not.toContain(pid);
  held.kill('SIGKILL');
  await waitUntil(() => n.stuck() === null);
  expect(untracked).toContain(pid);
  await expect(prepare(n, 4)).resolves.toMatchObject({ nodeId: 'n1' });
});

it('a round cancelled whose stop leaves a stuck process: the next prepare refuses and names it', async () => {
  const held = await sleeper();
  const pid = held.pid!;
  const g = groups((reason) => ({ state: 'stopped', reason, exits: [], stuck: { processes: [{ pid, state: 'D' }], afterKillMs: 5_000, pgids: [pid] } }));
  const n = node(g.startGroup);
  const env = new MockActivityEnvironment();
  const run = env.run(n.activities.runWorkers, assignment);
  await waitUntil(() => g.started() === 1);
  env.cancel();
  await expect(run).rejects.toThrow();
  await expect(prepare(n, 3)).rejects.toMatchObject({ type: WORKERS_STUCK, message: `worker ${pid} did not exit 5 s after SIGKILL (state D)` });
  held.kill('SIGKILL');
});
