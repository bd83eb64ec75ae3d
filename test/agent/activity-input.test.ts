/**
 * What a node agent accepts as an activity's input (src/agent/activity-input.ts), whoever
 * scheduled it: fast, no server; real directories and symlinks for the --allow checks.
 */
import { ApplicationFailure } from '@temporalio/common';
import { mkdir, mkdtemp, readdir, realpath, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createNodeActivities } from '../../activities/node';
import { createPoolActivities } from '../../activities/pool';
import { checkLaunch, compilePolicy, type LaunchPolicy } from '../../src/agent/allow';
import { checkpointDirPolicy, guardActivities, INPUT_SCHEMAS, type GuardOptions } from '../../src/agent/activity-input';
import { createCheckpointActivities } from '../../src/checkpoints';
import { log } from '../../src/log';

let root: string;
let train: string; // under --allow
let victim: string; // not under --allow
let launchPolicy: LaunchPolicy;
let pool: GuardOptions;
const run: GuardOptions = { nodeId: 'n1' }; // a `telastic run` agent: no policy

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'telastic-input-')));
  train = path.join(root, 'train');
  victim = path.join(root, 'victim');
  await mkdir(path.join(train, 'ckpt'), { recursive: true });
  await mkdir(victim);
  await writeFile(path.join(train, 'train.py'), 'print(1)\n');
  await writeFile(path.join(victim, 'ckpt_1.pt'), Buffer.from([0x80, 2]));
  await writeFile(path.join(victim, 'ckpt_2.pt'), Buffer.from([0x80, 2]));
  await utimes(path.join(victim, 'ckpt_1.pt'), new Date(0), new Date(0));
  await symlink(victim, path.join(train, 'to-victim'));
  await symlink(path.join(train, 'ckpt'), path.join(train, 'ckpt-link'));
  launchPolicy = await compilePolicy({ allow: [train], allowEnv: [] });
  pool = { nodeId: 'n1', policy: { slots: 1, launchPolicy, checkLaunch: (l) => checkLaunch(launchPolicy, l, 'n1') } };
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** Activities that record what reached them. */
function recorder() {
  const calls: [string, unknown][] = [];
  const act = (name: string) => async (input: unknown) => void calls.push([name, input]);
  const activities = Object.fromEntries(Object.keys(INPUT_SCHEMAS).map((n) => [n, act(n)])) as Record<string, (i: unknown) => Promise<unknown>>;
  return { calls, activities };
}

const assignment = (over: Record<string, unknown> = {}) => ({
  jobId: 'job-1', round: 1, nodeId: 'n1', role: 'default', groupRank: 0, groupWorldSize: 1, rankOffset: 0, localWorldSize: 1,
  worldSize: 1, masterAddr: '127.0.0.1', masterPort: 29_500, restartCount: 0, maxRestarts: 0, heartbeatIntervalMs: 1000,
  launch: { entrypoint: { script: path.join(train, 'train.py'), args: [], module: false, noPython: false }, env: {} },
  ...over,
});

/** The failure an activity of the guarded recorder fails with, and whether the activity ran. */
async function refused(o: GuardOptions, name: string, input: unknown): Promise<{ message: string; ran: boolean }> {
  const { calls, activities } = recorder();
  const err = await guardActivities(activities, o)[name]!(input).then(() => null, (e: unknown) => e);
  if (!(err instanceof ApplicationFailure)) throw new Error(`${name} was not refused: ${String(err)}`);
  expect(err).toMatchObject({ type: 'NotAllowed', nonRetryable: true });
  expect(err.message).not.toContain('\n');
  return { message: err.message, ran: calls.length > 0 };
}

async function accepted(o: GuardOptions, name: string, input: unknown): Promise<unknown> {
  const { calls, activities } = recorder();
  await guardActivities(activities, o)[name]!(input);
  expect(calls).toHaveLength(1);
  return calls[0]![1];
}

describe('every served activity has a schema', () => {
  it('covers what a pool agent registers, and refuses to serve one without a schema', () => {
    const node = createNodeActivities({ nodeId: 'n1', bindAddress: '127.0.0.1', output: { redirects: 0, tee: 0 }, shutdownTimeoutMs: 1000, baseEnv: {}, runDir: root, log });
    const served = { ...node.activities, ...createCheckpointActivities(), ...createPoolActivities('i1') };
    expect(Object.keys(guardActivities(served, pool)).sort()).toEqual(Object.keys(INPUT_SCHEMAS).sort());
    expect(() => guardActivities({ ...served, deleteEverything: async () => undefined }, pool)).toThrow('activity deleteEverything has no input schema');
  });
});

describe('ids: the spec\'s id schema, on every agent', () => {
  it.each(['../../x', '..', '.', 'a/b', '', 'x\n'])('runWorkers refuses jobId %p before anything runs', async (jobId) => {
    for (const o of [pool, run]) {
      const r = await refused(o, 'runWorkers', assignment({ jobId }));
      expect(r.ran).toBe(false);
      expect(r.message).toMatch(/^agent n1 refuses jobId .*: letters, digits and \. _ : @ - only|String must contain at least 1/);
    }
  });

  it('names the value printably: quoted when it holds control characters', async () => {
    expect((await refused(run, 'prepare', { jobId: 'a\x1b[31mb', round: 1, nodeId: 'n1' })).message).toBe(
      'agent n1 refuses jobId "a\\u001b[31mb": letters, digits and . _ : @ - only',
    );
  });

  it('keeps every accepted id inside the run dir as a path component', async () => {
    for (const jobId of ['a..b', 'x.', '1:2@3', 'A-b_c']) {
      const parsed = (await accepted(run, 'runWorkers', assignment({ jobId }))) as { jobId: string };
      const rel = path.relative(root, path.join(root, parsed.jobId, 'round_1'));
      expect(rel.startsWith('..') || path.isAbsolute(rel)).toBe(false);
    }
  });

  it('refuses a node id that is not this agent\'s, a missing field and extra arguments', async () => {
    expect((await refused(run, 'runWorkers', assignment({ nodeId: 'n2' }))).message).toBe('agent n1 refuses nodeId n2: not this agent');
    expect((await refused(pool, 'holdNode', { pool: 'p', nodeId: 'n2', incarnation: 'i' })).message).toBe('agent n1 refuses nodeId n2: not this agent');
    expect((await refused(run, 'nudge', { jobId: 'j', nodeId: 'n2' })).message).toBe('agent n1 refuses nodeId n2: not this agent');
    expect((await refused(run, 'nudge', { nodeId: 'n1' })).message).toBe('agent n1 refuses nudge: jobId is missing');
    expect((await refused(run, 'findCheckpoint', { jobId: 'j' })).message).toBe('agent n1 refuses findCheckpoint: dir is missing');
    const { activities } = recorder();
    const signal = guardActivities(activities, run).signalWorkers as unknown as (...a: unknown[]) => Promise<unknown>;
    await expect(signal({ jobId: 'j', round: 1, reason: 'x' }, 'more')).rejects.toThrow('agent n1 refuses signalWorkers with 2 arguments: it takes one');
  });

  it('refuses shapes the workflow never sends: keep 0, a negative round, a huge wait, ranks beyond the world', async () => {
    expect((await refused(run, 'findCheckpoint', { jobId: 'j', dir: train, keep: 0 })).message).toMatch(/^agent n1 refuses keep 0: /);
    expect((await refused(run, 'signalWorkers', { jobId: 'j', round: -1, reason: 'x' })).message).toMatch(/^agent n1 refuses round -1: /);
    expect((await refused(run, 'waitForCheckpoint', { jobId: 'j', dir: train, baseline: null, requestedAt: 0, timeoutMs: 1e12 })).message).toMatch(/^agent n1 refuses timeoutMs 1000000000000: /);
    expect((await refused(run, 'runWorkers', assignment({ rankOffset: 1 }))).message).toMatch(/^agent n1 refuses localWorldSize 1: rankOffset \+ localWorldSize exceeds worldSize/);
  });

  it('passes unknown fields through (a newer workflow during an upgrade)', async () => {
    expect(await accepted(run, 'signalWorkers', { jobId: 'j', round: 1, reason: 'x', newField: 1 })).toEqual({ jobId: 'j', round: 1, reason: 'x', newField: 1 });
  });
});

describe('a pool agent\'s runWorkers: checked before it stops anything', () => {
  it('refuses more workers than its slots, naming the field and both numbers', async () => {
    const r = await refused(pool, 'runWorkers', assignment({ localWorldSize: 3, worldSize: 3 }));
    expect(r).toEqual({ message: 'agent n1 refuses localWorldSize 3: more than its 1 slots (--nproc)', ran: false });
  });

  it('refuses a launch outside --allow, no launch, and checkpoint or resume paths outside --allow', async () => {
    const evil = path.join(victim, 'evil.py');
    const launch = { entrypoint: { script: evil, args: [], module: false, noPython: false }, env: {} };
    expect((await refused(pool, 'runWorkers', assignment({ launch }))).message).toBe(`agent n1 refuses ${evil}: no such file on this node`);
    expect((await refused(pool, 'runWorkers', assignment({ launch: undefined }))).message).toMatch(/^agent n1 refuses runWorkers without a launch/);
    expect((await refused(pool, 'runWorkers', assignment({ checkpointDir: victim }))).message).toBe(`agent n1 refuses checkpointDir ${victim}: not under --allow (${train})`);
    const resume = path.join(train, 'to-victim', 'ckpt_2.pt');
    expect((await refused(pool, 'runWorkers', assignment({ resumeFrom: resume }))).message).toBe(
      `agent n1 refuses resumeFrom ${resume}: resolves to ${path.join(victim, 'ckpt_2.pt')}, not under --allow (${train})`,
    );
  });

  it('runs an allowed assignment; a `telastic run` agent takes any size (its own command line)', async () => {
    await accepted(pool, 'runWorkers', assignment({ checkpointDir: path.join(train, 'ckpt'), resumeFrom: path.join(train, 'ckpt', 'ckpt_1.pt') }));
    await accepted(run, 'runWorkers', assignment({ localWorldSize: 3, worldSize: 3, launch: undefined }));
  });
});

describe('a pool agent\'s checkpoint activities: the real directory, under --allow', () => {
  const acts = () => guardActivities(createCheckpointActivities({ resolveDir: checkpointDirPolicy(pool) }), pool);

  it('refuses a directory outside --allow, directly or through a symlink inside it, and removes nothing', async () => {
    const a = acts();
    await expect(a.findCheckpoint({ jobId: 'x', dir: victim, keep: 1 })).rejects.toMatchObject({ type: 'NotAllowed', nonRetryable: true, message: `agent n1 refuses dir ${victim}: not under --allow (${train})` });
    const link = path.join(train, 'to-victim');
    await expect(a.findCheckpoint({ jobId: 'x', dir: link, keep: 1 })).rejects.toMatchObject({ message: `agent n1 refuses dir ${link}: resolves to ${victim}, not under --allow (${train})` });
    await expect(a.waitForCheckpoint({ jobId: 'x', dir: link, baseline: null, requestedAt: 0, timeoutMs: 10 })).rejects.toMatchObject({ type: 'NotAllowed' });
    expect((await readdir(victim)).sort()).toEqual(['ckpt_1.pt', 'ckpt_2.pt']);
  });

  it('scans the resolved directory and reports paths under the directory as given', async () => {
    await writeFile(path.join(train, 'ckpt', 'ckpt_5.pt'), Buffer.from([0x80, 2]));
    const given = path.join(train, 'ckpt-link');
    const report = await acts().findCheckpoint({ jobId: 'x', dir: given });
    expect(report.latest).toMatchObject({ path: path.join(given, 'ckpt_5.pt'), step: 5 });
    expect(await acts().waitForCheckpoint({ jobId: 'x', dir: given, baseline: null, requestedAt: 0, timeoutMs: 1000 })).toMatchObject({ path: path.join(given, 'ckpt_5.pt') });
  });

  it('on a `telastic run` agent scans any directory, as before', async () => {
    const report = await guardActivities(createCheckpointActivities({ resolveDir: checkpointDirPolicy(run) }), run).findCheckpoint({ jobId: 'x', dir: victim });
    expect(report.latest?.path).toBe(path.join(victim, 'ckpt_2.pt'));
  });
});
