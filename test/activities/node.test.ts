/**
 * createNodeActivities with an injected `startGroup` (the seam the scale benchmark uses): the
 * node activities drive whatever group they are given, with the same worker specs, heartbeats,
 * results and stops as with real processes. No process is started here.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { ActivityCancellationDetails } from '@temporalio/common';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createNodeActivities } from '../../activities/node';
import type { GroupOptions, GroupResult, WorkerGroup } from '../../src/agent/workers/types';
import type { RoundAssignment } from '../../src/job/assignment';

const runDir = mkdtempSync(path.join(os.tmpdir(), 'telastic-node-test-'));
afterAll(() => rmSync(runDir, { recursive: true, force: true }));

// Every activity a test started ends with it, also when the test failed half-way: a runWorkers
// left running would heartbeat for ever and keep jest from exiting.
const envs: Array<{ env: MockActivityEnvironment; runs: Promise<unknown>[] }> = [];
/** `from`: the execution that scheduled the activity (a job's own rounds and nudges come from the job id). */
function mockEnv(from?: { workflowId: string; workflowType: string }): MockActivityEnvironment {
  const env = new MockActivityEnvironment(from ? { workflowExecution: { workflowId: from.workflowId, runId: 'r1' }, workflowType: from.workflowType } : undefined);
  const runs: Promise<unknown>[] = [];
  const run = env.run.bind(env);
  env.run = ((fn: Parameters<typeof run>[0], ...args: unknown[]) => {
    const p = run(fn, ...(args as never[]));
    runs.push(p.catch(() => undefined)); // its own test awaits it; a cancelled one here is expected
    return p;
  }) as typeof env.run;
  envs.push({ env, runs });
  return env;
}
afterEach(async () => {
  for (const { env, runs } of envs.splice(0)) {
    env.cancel();
    await Promise.all(runs);
  }
});

const assignment: RoundAssignment = {
  jobId: 'job1', round: 2, nodeId: 'n1', role: 'default', groupRank: 1, groupWorldSize: 2, rankOffset: 2,
  localWorldSize: 2, worldSize: 4, masterAddr: '127.0.0.1', masterPort: 29500, restartCount: 1, maxRestarts: 3,
  heartbeatIntervalMs: 100,
};

/** A group that ends when told to: `end(result)`; `stop()` ends it as stopped. */
function fakeGroup() {
  const started: GroupOptions[] = [];
  const stops: string[] = [];
  let end: (r: GroupResult) => void = () => undefined;
  const startGroup = (opts: GroupOptions): WorkerGroup => {
    started.push(opts);
    const done = new Promise<GroupResult>((resolve) => (end = resolve));
    return {
      pids: [],
      wait: () => done,
      stop: async (reason?: string) => {
        stops.push(reason ?? '');
        end({ state: 'stopped', reason: reason ?? null, exits: [] });
      },
    };
  };
  return { startGroup, started, stops, end: (r: GroupResult) => end(r) };
}

function activities(startGroup: ReturnType<typeof fakeGroup>['startGroup'], adoptionWindowMs?: number) {
  return createNodeActivities({
    nodeId: 'n1', entrypoint: { script: 'train.py', args: ['--lr', '0.1'], module: false, noPython: false }, bindAddress: '127.0.0.1',
    output: { redirects: 0, tee: 0 }, shutdownTimeoutMs: 1000, baseEnv: { PATH: '/usr/bin' }, runDir, log: pino({ level: 'silent' }), startGroup, adoptionWindowMs,
  });
}

/** How the SDK cancels an activity whose workflow run has closed (its heartbeat found no run). */
const runClosed = (env: MockActivityEnvironment) => env.cancel('NOT_FOUND', new ActivityCancellationDetails({ notFound: true }));
const tick = (ms = 50) => new Promise((r) => setTimeout(r, ms));

describe('createNodeActivities with an injected startGroup', () => {
  it('starts the given group with the torchrun workers, heartbeats at the job interval, returns its result', async () => {
    const g = fakeGroup();
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 10_000 });
    let beats = 0;
    env.on('heartbeat', () => beats++);
    const result = env.run(activities(g.startGroup).activities.runWorkers, assignment);
    await waitUntil(() => g.started.length === 1 && beats >= 2);
    expect(g.started).toHaveLength(1);
    const { workers } = g.started[0];
    expect(workers.map((w) => [w.localRank, w.rank, w.env.RANK, w.env.WORLD_SIZE, w.env.TORCHELASTIC_RESTART_COUNT])).toEqual([
      [0, 2, '2', '4', '1'],
      [1, 3, '3', '4', '1'],
    ]);
    expect(workers[0].args).toEqual(['-u', 'train.py', '--lr', '0.1']);
    expect(beats).toBeGreaterThanOrEqual(2);
    g.end({ state: 'succeeded', exits: [] });
    await expect(result).resolves.toEqual({ state: 'succeeded' });
  });

  it('stops the group on cancellation, and prepare stops what an earlier round left', async () => {
    const g = fakeGroup();
    const env = mockEnv();
    const result = env.run(activities(g.startGroup).activities.runWorkers, assignment);
    await waitUntil(() => g.started.length === 1);
    env.cancel();
    await expect(result).rejects.toThrow();
    expect(g.stops).toEqual(['round cancelled']);

    const h = fakeGroup();
    const node = activities(h.startGroup);
    const running = mockEnv().run(node.activities.runWorkers, assignment).catch((e: unknown) => e);
    await waitUntil(() => h.started.length === 1);
    const prepared = await mockEnv().run(node.activities.prepare, { jobId: 'job1', round: 3, nodeId: 'n1' });
    expect(prepared).toMatchObject({ nodeId: 'n1' });
    expect(h.stops[0]).toBe('round 3 is forming');
    expect(String(await running)).toMatch(/were stopped: round 3 is forming/);
  });

  it('signalWorkers sends the checkpoint signal to the group of that job and round only', async () => {
    const g = fakeGroup();
    const sent: string[] = [];
    const startGroup = (opts: GroupOptions): WorkerGroup => ({ ...g.startGroup(opts), signal: (sig) => (sent.push(sig), 2) });
    const node = activities(startGroup);
    const running = mockEnv().run(node.activities.runWorkers, assignment);
    await waitUntil(() => g.started.length === 1);
    const signal = (round: number, jobId = 'job1') => mockEnv().run(node.activities.signalWorkers, { jobId, round, reason: 'test' });
    await expect(signal(2)).resolves.toEqual({ signal: 'SIGUSR1', signalled: 2 });
    await expect(signal(1)).resolves.toEqual({ signal: 'SIGUSR1', signalled: 0 });
    await expect(signal(2, 'other')).resolves.toEqual({ signal: 'SIGUSR1', signalled: 0 });
    expect(sent).toEqual(['SIGUSR1']);
    g.end({ state: 'succeeded', exits: [] });
    await running;
    await expect(signal(2)).resolves.toEqual({ signal: 'SIGUSR1', signalled: 0 });
  });

  it('a run that closed mid-round leaves its workers to the next run, which adopts them and gets their result', async () => {
    const g = fakeGroup();
    const node = activities(g.startGroup, 5_000);
    const old = mockEnv();
    const first = old.run(node.activities.runWorkers, assignment).catch((e: unknown) => e);
    await waitUntil(() => g.started.length === 1);
    // The next run's runWorkers may reach the node before the old one hears its run closed.
    const next = mockEnv().run(node.activities.runWorkers, assignment);
    await tick();
    runClosed(old);
    expect(String(await first)).toMatch(/NOT_FOUND/);
    await tick();
    expect(g.started).toHaveLength(1);
    expect(g.stops).toEqual([]);
    g.end({ state: 'succeeded', exits: [] });
    await expect(next).resolves.toEqual({ state: 'succeeded' });
    // A run adopting a round that already ended gets its result, not new workers.
    await expect(mockEnv().run(node.activities.runWorkers, assignment)).resolves.toEqual({ state: 'succeeded' });
    expect(g.started).toHaveLength(1);
  });

  it('workers nobody adopts within the window are stopped, and a run adopting them then hears they were stopped', async () => {
    const g = fakeGroup();
    const node = activities(g.startGroup, 200);
    const heard: string[] = [];
    node.onNudge((j) => heard.push(j));
    const old = mockEnv({ workflowId: assignment.jobId, workflowType: 'elasticJob' });
    const first = old.run(node.activities.runWorkers, assignment).catch((e: unknown) => e);
    await waitUntil(() => g.started.length === 1);
    expect(heard).toEqual([]);
    runClosed(old);
    await first;
    // The run gone may be this node dropped (its nudge unseen behind a cut link): the agent asks.
    expect(heard).toEqual([assignment.jobId]);
    expect(g.stops).toEqual([]);
    await waitUntil(() => g.stops.length > 0);
    expect(g.stops).toEqual(['not adopted within 0.2s']);
    // Adopting a stopped group reports it stopped (the job then counts the node lost and restarts).
    await expect(mockEnv().run(node.activities.runWorkers, assignment)).rejects.toThrow(/were stopped: not adopted/);
  });
});

describe('nudges', () => {
  it('a group workflow closing at the end of its round does not make the node ask the job (every node of the group would)', async () => {
    const g = fakeGroup();
    const node = activities(g.startGroup, 200);
    const heard: string[] = [];
    node.onNudge((j) => heard.push(j));
    const group = mockEnv({ workflowId: `${assignment.jobId}/round-2/run-0`, workflowType: 'runGroup' });
    const run = group.run(node.activities.runWorkers, assignment).catch((e: unknown) => e);
    await waitUntil(() => g.started.length === 1);
    runClosed(group);
    await run;
    await tick(30);
    expect(heard).toEqual([]);
  });

  it('hands on a drop a nudge carries only when the job scheduled it and this agent prepared a round of the job, none after the drop', async () => {
    const node = activities(fakeGroup().startGroup);
    const heard: unknown[] = [];
    node.onNudge((j, fate) => heard.push([j, fate]));
    const fate = { node: 'lost' as const, round: 2 };
    const fromJob = () => mockEnv({ workflowId: 'job1', workflowType: 'elasticJob' });
    // A fresh agent (a container restarted in place) may be hearing of its predecessor's drop.
    await fromJob().run(node.activities.nudge, { jobId: 'job1', nodeId: 'n1', fate });
    await mockEnv().run(node.activities.prepare, { jobId: 'job1', round: 2, nodeId: 'n1' });
    await fromJob().run(node.activities.nudge, { jobId: 'job1', nodeId: 'n1', fate });
    await mockEnv({ workflowId: 'someone-else', workflowType: 'elasticJob' }).run(node.activities.nudge, { jobId: 'job1', nodeId: 'n1', fate });
    await fromJob().run(node.activities.nudge, { jobId: 'job1', nodeId: 'n1' });
    await mockEnv().run(node.activities.prepare, { jobId: 'job1', round: 3, nodeId: 'n1' });
    await fromJob().run(node.activities.nudge, { jobId: 'job1', nodeId: 'n1', fate });
    expect(heard).toEqual([['job1', null], ['job1', fate], ['job1', null], ['job1', null], ['job1', null]]);
  });
});

describe('a pool agent (checkLaunch injected)', () => {
  it('starts the script by the path its check resolved, with the submitted env but without the agent\'s credentials', async () => {
    const g = fakeGroup();
    const node = createNodeActivities({
      nodeId: 'n1', bindAddress: '127.0.0.1', output: { redirects: 0, tee: 0 }, shutdownTimeoutMs: 1000, runDir, log: pino({ level: 'silent' }), startGroup: g.startGroup,
      baseEnv: { PATH: '/usr/bin', TEMPORAL_API_KEY: 'sk', TEMPORAL_NAMESPACE: 'ns', TELASTIC_ENCRYPTION_KEY_FILE: '/k' },
      checkLaunch: async (l) => ({ refused: null, launch: { ...l, entrypoint: { ...l.entrypoint, script: '/real/train.py' } }, passEnv: ['TEMPORAL_NAMESPACE'] }),
    });
    const launch = { entrypoint: { script: '/link/train.py', args: [], module: false, noPython: false }, env: { SEED: '1' } };
    const result = mockEnv().run(node.activities.runWorkers, { ...assignment, launch });
    await waitUntil(() => g.started.length === 1);
    const [w] = g.started[0].workers;
    expect(w.args).toEqual(['-u', '/real/train.py']);
    expect(Object.keys(w.env).filter((k) => k.startsWith('TEMPORAL_') || k === 'SEED' || k === 'PATH' || k.endsWith('KEY_FILE')).sort()).toEqual(['PATH', 'SEED', 'TEMPORAL_NAMESPACE']);
    g.end({ state: 'succeeded', exits: [] });
    await expect(result).resolves.toEqual({ state: 'succeeded' });
  });

  it('idleMs: Infinity before the job had the node do anything, 0 while its workers run, then time since; a nudge reaches every listener once', async () => {
    const g = fakeGroup();
    const node = activities(g.startGroup);
    expect(node.idleMs()).toBe(Infinity);
    const result = mockEnv().run(node.activities.runWorkers, assignment);
    await waitUntil(() => g.started.length === 1);
    await tick(30);
    expect(node.idleMs()).toBe(0);
    g.end({ state: 'succeeded', exits: [] });
    await result;
    await tick(30);
    expect(node.idleMs()).toBeGreaterThanOrEqual(25);
    expect(node.idleMs()).toBeLessThan(5_000);
    const heard: string[] = [];
    const off = node.onNudge((j) => heard.push(`a:${j}`));
    node.onNudge((j) => heard.push(`b:${j}`));
    await mockEnv().run(node.activities.nudge, { jobId: 'job1', nodeId: 'n1' });
    expect(node.idleMs()).toBeLessThan(25);
    off();
    await mockEnv().run(node.activities.nudge, { jobId: 'job2', nodeId: 'n1' });
    expect(heard).toEqual(['a:job1', 'b:job1', 'b:job2']);
  });
});

/** Waits for `cond` (a loaded machine may take a while to run the activity's first steps); 10 s at most. */
async function waitUntil(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${cond.toString()}`);
    await tick(5);
  }
}
