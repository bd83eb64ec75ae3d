/**
 * A worker never outlives its agent: the reaper sidecar kills every process group when the agent
 * is SIGKILLed, and killOrphans cleans up after an agent whose sidecar died with it.
 */
import { spawn } from 'child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';
import { createReaper, killOrphans } from '../../../src/agent/workers';
import { alive, readWhenWritten, removeTempDirs, tempDir, waitFor } from '../helpers';

const FIXTURES = join(__dirname, '..', 'fixtures');
const started: number[] = [];

/** A detached `sh` whose own group also holds a grandchild; resolves with both pids. */
async function detachedGroup(): Promise<{ pgid: number; grandchild: number }> {
  const dir = tempDir();
  const child = spawn('sh', ['-c', `sleep 1000 & echo $! > ${dir}/gc.tmp; mv ${dir}/gc.tmp ${dir}/gc; wait`], { detached: true, stdio: 'ignore' });
  child.unref();
  const pgid = child.pid!;
  started.push(pgid);
  return { pgid, grandchild: Number(await readWhenWritten(join(dir, 'gc'))) };
}

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const c = spawn('true');
  await new Promise((r) => c.once('exit', r));
  return c.pid!;
}

afterAll(() => {
  for (const pgid of started) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  removeTempDirs();
});

describe('reaper', () => {
  it('kills every worker and grandchild within 5 s of the agent being SIGKILLed', async () => {
    const [stateDir, outDir] = [tempDir(), tempDir()];
    const agent = spawn(process.execPath, [join(FIXTURES, 'fake-agent.js'), stateDir, outDir], { stdio: ['ignore', 'inherit', 'inherit'] });
    const pids = JSON.parse(await readWhenWritten(join(outDir, 'pids'))) as { agent: number; workers: number[] };
    const grandchildren = await Promise.all([0, 1].map(async (lr) => Number(await readWhenWritten(join(outDir, `gc${lr}`)))));
    const everyone = [...pids.workers, ...grandchildren];
    expect(everyone.every(alive)).toBe(true);
    const stateFile = join(stateDir, `agent-${pids.agent}.json`);
    expect((JSON.parse(readFileSync(stateFile, 'utf8')) as { pgids: number[] }).pgids.sort()).toEqual([...pids.workers].sort());

    const exited = new Promise((r) => agent.once('exit', r));
    process.kill(pids.agent, 'SIGKILL');
    await exited;
    await waitFor(() => everyone.every((pid) => !alive(pid)), 'workers and grandchildren to die', 5_000);
    await waitFor(() => !existsSync(stateFile), 'the reaper to remove the state file', 5_000);
  });

  it('close() kills the groups still tracked and removes the state file', async () => {
    const stateDir = tempDir();
    const { pgid, grandchild } = await detachedGroup();
    const reaper = await createReaper(stateDir);
    reaper.track(pgid);
    await reaper.close();
    await waitFor(() => !alive(pgid) && !alive(grandchild), 'the tracked group to die', 5_000);
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it('untracked groups are left alone', async () => {
    const { pgid, grandchild } = await detachedGroup();
    const reaper = await createReaper(tempDir());
    reaper.track(pgid);
    reaper.untrack(pgid);
    await reaper.close();
    expect([alive(pgid), alive(grandchild)]).toEqual([true, true]);
    process.kill(-pgid, 'SIGKILL');
  });
});

describe('killOrphans', () => {
  it('kills the groups left by a dead agent and removes its state file, leaving live agents alone', async () => {
    const stateDir = tempDir();
    const orphan = await detachedGroup();
    const deadAgent = await deadPid();
    const deadFile = join(stateDir, `agent-${deadAgent}.json`);
    writeFileSync(deadFile, JSON.stringify({ agentPid: deadAgent, agentStartTime: null, pgids: [orphan.pgid], startTimes: {} }));

    const liveAgent = await detachedGroup(); // any live process stands in for a running agent
    const itsWorkers = await detachedGroup();
    const liveFile = join(stateDir, `agent-${liveAgent.pgid}.json`);
    writeFileSync(liveFile, JSON.stringify({ agentPid: liveAgent.pgid, agentStartTime: null, pgids: [itsWorkers.pgid], startTimes: {} }));

    const report = await killOrphans(stateDir);
    expect(report).toEqual({ killed: [orphan.pgid], removed: [deadFile] });
    expect([alive(orphan.pgid), alive(orphan.grandchild)]).toEqual([false, false]);
    expect([alive(itsWorkers.pgid), alive(itsWorkers.grandchild)]).toEqual([true, true]);
    expect(existsSync(liveFile)).toBe(true);
  });

  it('does not kill a group whose leader pid now belongs to another process', async () => {
    const stateDir = tempDir();
    const stranger = await detachedGroup();
    const deadAgent = await deadPid();
    const startTimes = { [stranger.pgid]: '1' }; // recorded start time differs: the pid was reused
    writeFileSync(join(stateDir, `agent-${deadAgent}.json`), JSON.stringify({ agentPid: deadAgent, agentStartTime: null, pgids: [stranger.pgid], startTimes }));
    const report = await killOrphans(stateDir);
    expect(report.killed).toEqual([]);
    expect(alive(stranger.pgid)).toBe(true);
  });

  it('is a no-op without a state dir', async () => {
    expect(await killOrphans(join(tempDir(), 'missing'))).toEqual({ killed: [], removed: [] });
  });
});
