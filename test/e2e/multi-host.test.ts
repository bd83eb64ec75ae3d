/**
 * Several hosts: three network namespaces on one bridge (test/setup/netns.ts), a private dev
 * server bound to 0.0.0.0 in the root namespace, reached at the bridge's address, and one agent
 * per host with `--local-addr` its own address. One job walks through the file's tests in order:
 * MASTER_ADDR is a host's address; a host whose link is cut is dropped, and once healed kills its
 * stale workers and rejoins; a cut master host makes the job re-form around a new master. Then
 * real DDP (PyTorch, gloo) on two hosts, its master host cut mid-training.
 * Needs root (`ip netns add`); skipped, saying why, where that is refused.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { JobStatus } from '../../src/job/status';
import type { DevServer } from '../../src/temporal/dev-server';
import { makeHosts, netnsRefusal, sweepStale, type TestHost, type TestHosts } from '../setup/netns';
import { startPrivateServer } from '../setup/temporal';
import { FAST_RDZV, ROOT, WORKER, alive, finish, recordedEnvs, startTelastic, status, stopAll, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const TRAIN = path.join(ROOT, 'examples', 'train.py');
const refused = netnsRefusal();
if (refused) console.log(`skipping the multi-host tests: ${refused}`);

(refused ? describe.skip : describe)('what a killed run left', () => {
  test('the next run removes the namespaces, links and processes of a run that is gone, and nothing of one still running', async () => {
    const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'ignore' });
    const dead = spawnSync('true').pid!; // a pid that has exited
    const [ns, bridge, veth, peer, live] = [`tl${dead}n0`, `tl${dead}br`, `tl${dead}v0`, `tl${dead}p0`, `tl${process.pid}live`];
    let sleeper: ChildProcess | undefined;
    try {
      ip('netns', 'add', ns);
      ip('netns', 'add', live);
      ip('link', 'add', bridge, 'type', 'bridge');
      ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', peer);
      ip('link', 'set', peer, 'netns', ns);
      ip('link', 'set', veth, 'master', bridge);
      sleeper = spawn('ip', ['netns', 'exec', ns, 'sleep', '600'], { stdio: 'ignore' });
      const ended = new Promise((resolve) => sleeper!.once('exit', (_, signal) => resolve(signal)));
      await waitFor('a process in the namespace', () => execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).trim() !== '', 10_000);
      const names = () => `${execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })}${execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })}`;
      expect(names()).toContain(veth);

      expect(sweepStale().sort()).toEqual([bridge, ns].sort());
      expect(names()).not.toMatch(new RegExp(`tl${dead}(n0|br|v0)\\b`));
      expect(names()).toContain(live);
      expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r('still running after 10 s'), 10_000).unref())])).toBe('SIGKILL');
    } finally {
      sleeper?.kill('SIGKILL');
      for (const n of [ns, live]) spawnSync('ip', ['netns', 'del', n]);
      for (const l of [bridge, veth]) spawnSync('ip', ['link', 'del', l]);
    }
  });
});

(refused ? describe.skip : describe)('three hosts in network namespaces', () => {
  let net: TestHosts | undefined;
  let server: DevServer | undefined;
  let conn: Connection | undefined;
  let address = '';
  const agents: Agent[] = [];
  const out = tmpDir('hosts');
  const job = uniqueJobId('hosts');
  const nodeId = (i: number) => `tl${process.pid}h${i}`;
  const hostOf = (id: string): TestHost => net!.hosts[Number(id.slice(id.lastIndexOf('h') + 1))];
  const c = () => conn!;

  beforeAll(async () => {
    net = makeHosts(3);
    server = await startPrivateServer({ ip: '0.0.0.0' });
    address = `${net.serverIp}:${server.address.split(':').pop()}`;
    conn = await Connection.connect({ address });
    for (const [i, h] of net.hosts.entries()) {
      const args = ['run', '--rdzv-endpoint', address, '--node-id', nodeId(i), '--local-addr', h.ip, '--nnodes', '2:3', '--max-restarts', '5', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];
      agents.push(startTelastic(nodeId(i), args, {}, net.exec(h, [])));
    }
  }, 90_000);

  afterAll(async () => {
    // Each step runs even when an earlier one (or the set-up) failed half way.
    if (net) for (const h of net.hosts) try { net.heal(h); } catch { /* gone */ }
    await stopAll(agents);
    await conn?.close().catch(() => undefined);
    await server?.stop();
    net?.destroy();
    for (const a of agents) rmSync(path.join(os.tmpdir(), 'telastic-test-state', a.nodeId), { recursive: true, force: true });
  }, 30_000);

  /** What a torch job did, for a wait that timed out: steps per world size, the job, the agents' last lines. */
  const whatRan = async (jobId: string, lines: number[][], pair: Agent[]) => {
    const runs = lines.reduce<string[]>((acc, [step, world], i) => (i === 0 || lines[i - 1][1] !== world ? [...acc, `from step ${step} at world size ${world}`] : acc), []);
    const s = await status(c(), jobId).then((x) => JSON.stringify({ state: x.state, round: x.round, restarts: x.restarts, lastFailure: x.lastFailure, nodes: x.nodes }), String);
    const tails = pair.map((a) => `--- ${a.nodeId}:\n${a.output().trim().split('\n').slice(-12).join('\n')}`);
    return [`progress: ${runs.join(', ') || 'none'} (${lines.length} lines)`, `job: ${s}`, ...tails].join('\n');
  };

  /** Running members in group-rank order. */
  const members = (s: JobStatus) => s.nodes.filter((n) => n.state === 'running' && n.groupRank !== null).sort((a, b) => a.groupRank! - b.groupRank!);
  const envsOf = (round: number) => [...recordedEnvs(out).values()].filter((e) => e.TELASTIC_ROUND === String(round));
  const workersOf = (round: number, node: string) =>
    readdirSync(out).filter((f) => f.startsWith(`pid.${round}.${node}.`)).map((f) => Number(readFileSync(path.join(out, f), 'utf8')));
  let last: JobStatus;

  test('MASTER_ADDR is the address of the host that holds group rank 0', async () => {
    last = await waitForRound(c(), job, (s) => s.worldSize === 3, 90_000);
    for (const n of last.nodes) expect(n.address).toBe(hostOf(n.nodeId).ip);
    // ip netns exec execs: the pid we hold (and signal) is the agent's own.
    for (const a of agents) expect(readlinkSync(`/proc/${a.proc.pid}/exe`)).toBe(realpathSync(process.execPath));
    const envs = await waitFor('3 workers', () => (envsOf(last.round).length === 3 ? envsOf(last.round) : null));
    const master = hostOf(members(last)[0].nodeId).ip;
    for (const e of envs) expect(e.MASTER_ADDR).toBe(master);
  });

  test('a host whose link is cut is dropped; healed, it kills its stale workers and rejoins', async () => {
    const victim = members(last)[1];
    const stale = await waitFor('victim worker started', () => (workersOf(last.round, victim.nodeId).length ? workersOf(last.round, victim.nodeId) : null));
    net!.cut(hostOf(victim.nodeId));
    const cutAt = Date.now();
    const shrunk = await waitForRound(c(), job, (s) => s.worldSize === 2 && s.round > last.round, 30_000);
    // Heartbeat timeout 3 s, then a re-rendezvous: the bound only catches a hang.
    expect(Date.now() - cutAt).toBeLessThan(20_000);
    expect(shrunk.nodes.find((n) => n.nodeId === victim.nodeId)?.state).toBe('lost');
    expect(shrunk.lastFailure).toMatchObject({ nodeId: victim.nodeId, rank: null });

    net!.heal(hostOf(victim.nodeId));
    await waitFor('stale workers killed', () => stale.every((p) => !alive(p)), 30_000);
    last = await waitForRound(c(), job, (s) => s.worldSize === 3 && s.round > shrunk.round && members(s).some((n) => n.nodeId === victim.nodeId), 60_000);
    // Admitting it back cost no restart (and when one happened, this shows its failure).
    expect({ restarts: last.restarts, lastFailure: last.lastFailure }).toEqual({ restarts: shrunk.restarts, lastFailure: shrunk.lastFailure });
    expect(members(last).at(-1)?.nodeId).toBe(victim.nodeId); // a newcomer, appended
  });

  test('a cut master host: the job re-forms with a new master on a surviving host', async () => {
    const master = members(last)[0];
    const stale = await waitFor('master worker started', () => (workersOf(last.round, master.nodeId).length ? workersOf(last.round, master.nodeId) : null));
    net!.cut(hostOf(master.nodeId));
    const cutAt = Date.now();
    const reformed = await waitForRound(c(), job, (s) => s.worldSize === 2 && s.round > last.round, 30_000);
    expect(Date.now() - cutAt).toBeLessThan(20_000);
    expect(reformed.nodes.find((n) => n.nodeId === master.nodeId)?.state).toBe('lost');
    const newMaster = members(reformed)[0];
    expect(newMaster.nodeId).not.toBe(master.nodeId);
    const envs = await waitFor('2 workers', () => (envsOf(reformed.round).length === 2 ? envsOf(reformed.round) : null));
    for (const e of envs) expect(e.MASTER_ADDR).toBe(hostOf(newMaster.nodeId).ip);

    net!.heal(hostOf(master.nodeId));
    await waitFor('stale master workers killed', () => stale.every((p) => !alive(p)), 30_000);
    finish(out);
    expect(await Promise.all(agents.map((a) => a.exited))).toEqual([0, 0, 0]);
    expect((await status(c(), job)).state).toBe('succeeded');
  });

  test('real DDP (gloo) on two hosts: the master host cut mid-training, the survivor resumes from the checkpoint and finishes', async () => {
    const dir = tmpDir('hosts-torch');
    const torchJob = uniqueJobId('hosts-torch');
    const progressFile = path.join(dir, 'progress.log');
    /** `[step, world size]` per step, from rank 0. */
    const progress = () => (existsSync(progressFile) ? readFileSync(progressFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => l.split(' ').slice(0, 2).map(Number)) : []);
    // The first round waits for both agents (it forms as soon as both are in). With the 1 s last
    // call, an agent that joined later than the other's first round took to start its worker and
    // train 60 steps (under load, agents start 13-17 s after spawn, a few seconds apart) left
    // the whole job at world size 1, and the wait below timed out.
    const rdzv = FAST_RDZV.map((f) => f.replace('last_call_timeout=1,', 'last_call_timeout=60,'));
    const pair = net!.hosts.slice(0, 2).map((h, i) => {
      const id = `${nodeId(i)}t`;
      const args = ['run', '--rdzv-endpoint', address, '--node-id', id, '--local-addr', h.ip, '--nnodes', '1:2', '--max-restarts', '3', '--rdzv-id', torchJob,
        '--checkpoint-dir', path.join(dir, 'ckpt'), ...rdzv, TRAIN, '--steps', '60', '--ckpt-every', '10', '--step-time', '0.1', '--progress', progressFile];
      // Every namespace has the machine's hostname, which gloo would bind to: name the interface.
      const a = startTelastic(id, args, { PYTHON_EXEC: PYTHON, GLOO_SOCKET_IFNAME: 'eth0' }, net!.exec(h, []));
      agents.push(a);
      return a;
    });
    await waitFor('step 25 at world size 2', () => progress().some(([step, world]) => step >= 25 && world === 2), 120_000).catch(async (err: Error) => {
      throw new Error(`${err.message}; ${await whatRan(torchJob, progress(), pair)}`);
    });
    const master = members(await status(c(), torchJob))[0];
    const masterHost = hostOf(master.nodeId.slice(0, -1));
    // The survivor's rank now waits in an all-reduce for a peer whose packets are dropped.
    net!.cut(masterHost);
    const survivor = pair.find((a) => a.nodeId !== master.nodeId)!;
    expect(await survivor.exited).toBe(0);
    const lines = progress();
    expect(lines.at(-1)).toEqual([60, 1]);
    const resumed = lines.findIndex(([, world]) => world === 1);
    expect((lines[resumed][0] - 1) % 10).toBe(0); // from a checkpoint, not from scratch
    expect(lines[resumed][0]).toBeGreaterThan(10);
    // Blame the cause: the cut host, not the survivor whose collective broke.
    expect(await status(c(), torchJob)).toMatchObject({ state: 'succeeded', restarts: 1, lastFailure: { nodeId: master.nodeId, rank: null } });
    net!.heal(masterHost);
    expect(await pair.find((a) => a !== survivor)!.exited).toBe(0); // healed, it hears the job is over
  }, 180_000);
});
