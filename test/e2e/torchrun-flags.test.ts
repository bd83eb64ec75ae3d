/**
 * torchrun's worker flags, each run under `telastic run` and under `torchrun --standalone` on this
 * machine with the same tiny worker (test/fixtures/flags_worker.py), comparing what the workers
 * see: their environment and CPU affinity, the signal they get, the files their output lands in.
 * Needs torch >= 2.10 in .venv (the first torchrun with all of these flags).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { testAddress } from '../setup/temporal';
import { ROOT, startAgent, stopAll, tmpDir, uniqueJobId, waitFor, type Agent } from './harness';

const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const TORCHRUN = path.join(ROOT, '.venv', 'bin', 'torchrun');
const SCRIPT = path.join(ROOT, 'test', 'fixtures', 'flags_worker.py');

const agents: Agent[] = [];
const dirs: string[] = [];
const pids: number[] = [];
afterAll(async () => {
  await stopAll(agents);
  // torchrun's workers outlive a torchrun that died: whatever a failed test left.
  for (const pid of pids) try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Run {
  out: string;
  code: number | null;
  output: string;
}

type Launch = { flags: string[]; env?: NodeJS.ProcessEnv; scriptArgs?: string[]; signal?: NodeJS.Signals };

function outDir(name: string): string {
  const d = tmpDir(name);
  dirs.push(d);
  return d;
}

/** Wait for both workers to be ready, then send `signal` to the launcher. */
async function signalWhenReady(out: string, pid: number, signal: NodeJS.Signals): Promise<void> {
  await waitFor('both workers ready', () => existsSync(path.join(out, 'ready_0')) && existsSync(path.join(out, 'ready_1')), 60_000, 50);
  process.kill(pid, signal);
}

async function underTorchrun(name: string, l: Launch): Promise<Run> {
  const out = outDir(`${name}-torchrun`);
  const args = ['--standalone', '--nproc-per-node', '2', ...l.flags, SCRIPT, out, ...(l.scriptArgs ?? [])];
  const proc = spawn(TORCHRUN, args, { env: { ...process.env, ...l.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  pids.push(proc.pid!);
  let output = '';
  proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  if (l.signal) await signalWhenReady(out, proc.pid!, l.signal);
  const code = await exited;
  return { out, code, output };
}

async function underTelastic(name: string, l: Launch): Promise<Run> {
  const out = outDir(`${name}-telastic`);
  const job = uniqueJobId(name);
  const flags = ['--nnodes', '1', '--nproc-per-node', '2', '--rdzv-id', job, '--shutdown-timeout', '5', ...l.flags, SCRIPT, out, ...(l.scriptArgs ?? [])];
  const agent = startAgent(testAddress(), `${name}-a`, flags, { PYTHON_EXEC: PYTHON, ...l.env });
  agents.push(agent);
  if (l.signal) await signalWhenReady(out, agent.proc.pid!, l.signal);
  const code = await agent.exited;
  return { out, code, output: agent.output() };
}

/** What each worker recorded (view_<rank>.json), by rank. */
function views(out: string): Record<string, unknown>[] {
  return [0, 1].map((r) => JSON.parse(readFileSync(path.join(out, `view_${r}.json`), 'utf8')) as Record<string, unknown>);
}

/** The one file named `name` anywhere under `dir` (torchrun's run directory has a random suffix). */
function findFile(dir: string, name: string): string {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else if (e.name === name) found.push(path.join(d, e.name));
    }
  };
  walk(dir);
  expect(found).toHaveLength(1);
  return found[0]!;
}

const both = (name: string, l: Launch) => Promise.all([underTelastic(name, l), underTorchrun(name, l)]);

describe('--virtual-local-rank', () => {
  it.each([
    ['CUDA_VISIBLE_DEVICES unset', undefined, [['0', '0'], ['0', '1']]],
    ['CUDA_VISIBLE_DEVICES=3,5', '3,5', [['0', '3'], ['0', '5']]],
  ])('%s: each worker gets LOCAL_RANK=0 and its own device, as under torchrun', async (_, visible, expected) => {
    const env = { CUDA_VISIBLE_DEVICES: visible };
    const [tl, tr] = await both('vlr', { flags: ['--virtual-local-rank'], env });
    expect([tl.code, tr.code]).toEqual([0, 0]);
    expect(views(tl.out)).toEqual(views(tr.out));
    expect(views(tl.out).map((v) => [v.LOCAL_RANK, v.CUDA_VISIBLE_DEVICES])).toEqual(expected);
  }, 120_000);

  it('without it: LOCAL_RANK is the local rank and CUDA_VISIBLE_DEVICES is inherited, as under torchrun', async () => {
    const [tl, tr] = await both('novlr', { flags: [], env: { CUDA_VISIBLE_DEVICES: '3,5' } });
    expect(views(tl.out)).toEqual(views(tr.out));
    expect(views(tl.out).map((v) => [v.LOCAL_RANK, v.CUDA_VISIBLE_DEVICES])).toEqual([['0', '3,5'], ['1', '3,5']]);
  }, 120_000);
});

describe('--signals-to-handle', () => {
  it.each([
    ['the default list', [], 'SIGHUP'],
    ['SIGUSR2,SIGTERM', ['--signals-to-handle', 'SIGUSR2,SIGTERM'], 'SIGUSR2'],
  ] as const)('%s: a listed signal sent to the agent reaches every worker as itself, as under torchrun', async (_, flags, signal) => {
    const [tl, tr] = await both('sig', { flags: [...flags], scriptArgs: ['--wait-signal'], signal });
    const got = (r: Run) => [0, 1].map((rank) => readFileSync(path.join(r.out, `got_${rank}`), 'utf8'));
    expect(got(tl)).toEqual(got(tr));
    expect(got(tl)).toEqual([signal, signal]);
    // Both exit non-zero after it: torchrun's SignalException gives 1, telastic an agent stopped 143.
    expect([tl.code, tr.code]).toEqual([143, 1]);
    expect(tl.output).toContain(`telastic: ${signal}: node sig-a leaves job`);
    // Both say so: the environment variable torch sets for its workers too.
    expect(views(tl.out)).toEqual(views(tr.out));
    expect(views(tl.out)[0]!.TORCHELASTIC_SIGNALS_TO_HANDLE).toBe(flags.length ? 'SIGUSR2,SIGTERM' : 'SIGTERM,SIGINT,SIGHUP,SIGQUIT');
  }, 120_000);
});

describe('--duplicate-stdout-filters / --duplicate-stderr-filters', () => {
  it('teed lines that match go to filtered_stdout.log / filtered_stderr.log of the attempt, as under torchrun', async () => {
    const l = (r: string): Launch => ({ flags: ['--log-dir', r, '-t', '0:3', '--duplicate-stdout-filters', 'apple,orange', '--duplicate-stderr-filters', 'orange,,'] });
    const tlOut = outDir('dup-logs-telastic');
    const trOut = outDir('dup-logs-torchrun');
    const [tl, tr] = await Promise.all([underTelastic('dup', l(tlOut)), underTorchrun('dup', l(trOut))]);
    expect([tl.code, tr.code]).toEqual([0, 0]);
    const file = (dir: string, name: string) => readFileSync(findFile(dir, name), 'utf8');
    // Lines carry each launcher's console prefix: torchrun's [<role><local rank>]:, telastic's [rank<rank>]:.
    const telasticPrefixed = (text: string) => text.replace(/^\[default(\d+)\]:/gm, '[rank$1]:');
    for (const name of ['filtered_stdout.log', 'filtered_stderr.log']) expect(file(tlOut, name)).toBe(telasticPrefixed(file(trOut, name)));
    expect(file(tlOut, 'filtered_stdout.log')).toBe('[rank0]:apple 0\n'); // only local rank 0 is teed
    expect(file(tlOut, 'filtered_stderr.log')).toBe('[rank0]:orange, 0\n'); // ",," is a comma
    for (const name of ['stdout.log', 'stderr.log']) expect(file(tlOut, name)).toBe(file(trOut, name));
  }, 120_000);
});

describe('--numa-binding', () => {
  /** torch's own CPU sets for this machine (torch.numa.binding), with local rank N as GPU N on NUMA node 0. */
  function torchCpuSets(mode: string): number[][] {
    const code = [
      'import json, sys',
      'import torch.numa.binding as b',
      'mode, n = sys.argv[1], 2',
      'b._get_gpu_count = lambda: n',
      'b._get_numa_node_index_for_gpu_index = lambda *, gpu_index: 0',
      'o = b.NumaOptions(affinity_mode=b.AffinityMode(mode))',
      'print(json.dumps([sorted(b._get_logical_cpus_to_bind_to(gpu_index=i, numa_options=o)) for i in range(n)]))',
    ].join('\n');
    const r = spawnSync(PYTHON, ['-c', code, mode], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout) as number[][];
  }
  const nodes = () => readFileSync('/sys/devices/system/node/possible', 'utf8').trim();

  it.each(['node', 'exclusive'])('%s: each worker runs on the CPUs torch binds its local rank to on this machine', async (mode) => {
    expect(nodes()).toBe('0'); // the machine this test was written for: one NUMA node
    const [tl, tr] = await both(`numa-${mode}`, { flags: ['--numa-binding', mode] });
    expect(tl.code).toBe(0);
    const said = tl.output.split('\n').filter((line) => line.includes('--numa-binding'));
    expect(said).toHaveLength(1);
    if (mode === 'node') expect(said[0]).toContain('this machine has one NUMA node, so binding changes nothing');
    if (tr.code === 0) {
      // A machine with an NVIDIA GPU: torchrun binds, and the workers must see the same.
      expect(views(tl.out).map((v) => v.affinity)).toEqual(views(tr.out).map((v) => v.affinity));
    } else {
      // Without one, torchrun cannot bind (it asks CUDA where GPU 0 is): torch's own sets, GPU N as local rank N.
      expect(tr.output).toContain('Found no NVIDIA driver');
      expect(views(tl.out).map((v) => v.affinity)).toEqual(torchCpuSets(mode));
    }
  }, 120_000);
});

describe('--event-log-handler console', () => {
  /** torch's worker status events in an output, without what differs by launcher and run. */
  function workerEvents(output: string) {
    return output
      .split('\n')
      .filter((l) => l.startsWith('{"name": "torchelastic.worker.status.') && l.includes('"source": "WORKER"'))
      .map((l) => {
        const e = JSON.parse(l) as { name: string; source: string; metadata: Record<string, unknown> };
        // run_id, hostname and rdzv_backend differ by launcher; worker_id is a pid.
        const rest = Object.fromEntries(Object.entries(e.metadata).filter(([k]) => !['run_id', 'worker_id', 'hostname', 'rdzv_backend', 'metadata'].includes(k)));
        const { worker_id: workerId, metadata } = e.metadata;
        const md = JSON.parse(metadata as string) as Record<string, unknown[]>;
        return { name: e.name, global_rank: rest.global_rank, ...rest, workerId: typeof workerId, metadata: { ...md, worker_pid: md.worker_pid!.map((p) => typeof p) } };
      })
      .sort((x, y) => `${x.name}${String(x.global_rank)}`.localeCompare(`${y.name}${String(y.global_rank)}`));
  }

  it.each([
    ['a round that succeeds', [], [0, 0]],
    ['a round whose rank 1 exits 3', ['--fail-rank', '1', '--wait-signal'], [1, 1]],
  ] as const)('%s: the same worker status events as torchrun, one JSON line each', async (_, scriptArgs, codes) => {
    const [tl, tr] = await both('events', { flags: ['--event-log-handler', 'console'], scriptArgs: [...scriptArgs], env: { PYTHON_EXEC: PYTHON } });
    expect([tl.code, tr.code]).toEqual(codes);
    const events = workerEvents(tl.output);
    expect(events).toEqual(workerEvents(tr.output));
    const states = events.map((e) => `${e.name.split('.').pop()} ${String(e.global_rank)}`);
    expect(states).toEqual(scriptArgs.length ? ['FAILED 1', 'START 0', 'START 1', 'TERMINATED 0'] : ['START 0', 'START 1', 'SUCCEEDED 0', 'SUCCEEDED 1']);
  }, 120_000);
});

describe('bad values: one line naming the flag, exit 2', () => {
  it.each([
    [['--signals-to-handle', 'SIGTERM,TERM'], '--signals-to-handle SIGTERM,TERM: TERM is not a signal'],
    [['--numa-binding', 'cores'], '--numa-binding cores: expected one of node, socket, exclusive, core-complex'],
    [['--duplicate-stdout-filters', 'x'], '--duplicate-stdout-filters x: needs --log-dir'],
    [['--event-log-handler', 'file'], '--event-log-handler file: expected one of null, console, dynamic_rendezvous'],
  ])('%j', async (flags, message) => {
    const out = outDir('bad');
    const agent = startAgent(testAddress(), 'bad-a', ['--nproc-per-node', '2', ...flags, SCRIPT, out]);
    agents.push(agent);
    expect(await agent.exited).toBe(2);
    const lines = agent.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`telastic run: ${message}`);
  }, 60_000);
});
