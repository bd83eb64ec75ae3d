/**
 * torchrun's `--numa-binding MODE` (torch/numa/binding.py): local rank N runs on the CPUs near
 * GPU N, through `numactl --physcpubind=<cpus> command…` as torch wraps it (`taskset -c` where
 * there is no numactl: the same CPU affinity). The CPU sets are
 * torch's, mode by mode, computed from a `NumaTopology` (pure, `bindCpus`) that `readTopology`
 * reads from sysfs; a GPU's NUMA node comes from its PCI address (nvidia-smi) and
 * /sys/bus/pci/devices/ADDR/numa_node, where torch asks CUDA for the address.
 */
import { execFileSync } from 'child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'fs';
import { delimiter, join } from 'path';
import type { NumaMode } from '../../config/values';

/** What torch's binding reads, as data. CPU and node numbers are the kernel's. */
export interface NumaTopology {
  /** The CPUs of each NUMA node (/sys/devices/system/node/nodeN/cpulist). */
  nodeCpus: Record<number, number[]>;
  /** The CPUs the agent may run on (its affinity): bindings never leave them. */
  allowed: number[];
  /** The NUMA node of each GPU, by CUDA index. */
  gpuNodes: number[];
  /** CPU → the CPUs of its physical core (thread_siblings_list). */
  siblings: Record<number, number[]>;
  /** CPU → the CPUs sharing its largest unified or data cache (core-complex). */
  maxCache: Record<number, number[]>;
  /** CPU → its socket (physical_package_id). */
  socket: Record<number, number>;
}

/** "0-2,4" → [0, 1, 2, 4] (a sysfs list). */
export function parseCpuList(text: string): number[] {
  const out = new Set<number>();
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [a, b] = part.split('-').map(Number);
    for (let i = a!; i <= (b ?? a!); i++) out.add(i);
  }
  return [...out].sort((x, y) => x - y);
}

/** [0, 1, 2, 4] → "0-2,4", as torch's `_get_ranges_str_from_ints`. */
export function cpuListString(cpus: Iterable<number>): string {
  const s = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j]! + 1) j++;
    parts.push(i === j ? `${s[i]}` : `${s[i]}-${s[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** Thrown when a binding cannot be computed (torch raises too; it has no fallback by default). */
export class NumaBindingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NumaBindingError';
  }
}

/** The CPUs GPU `gpu`'s worker is bound to under `mode`: torch's `_get_logical_cpus_to_bind_to`. */
export function bindCpus(mode: NumaMode, gpu: number, t: NumaTopology): number[] {
  const allowed = new Set(t.allowed);
  const nodeAllowed = (n: number) => {
    const cpus = t.nodeCpus[n];
    if (cpus === undefined) throw new NumaBindingError(`could not determine the CPUs of NUMA node ${n}`);
    return cpus.filter((c) => allowed.has(c));
  };
  const node = t.gpuNodes[gpu];
  if (node === undefined) throw new NumaBindingError(`no GPU ${gpu} (the machine has ${t.gpuNodes.length})`);
  const sorted = (xs: Iterable<number>) => [...new Set(xs)].sort((a, b) => a - b);
  const groupBy = (cpus: number[], key: (c: number) => number) => {
    const m = new Map<number, number[]>();
    for (const c of cpus) m.set(key(c), [...(m.get(key(c)) ?? []), c]);
    return m;
  };
  const gpusOfNode = () => t.gpuNodes.flatMap((n, g) => (n === node ? [g] : []));
  let cpus: number[];
  if (mode === 'node') cpus = nodeAllowed(node);
  else if (mode === 'socket') {
    const socketOf = (n: number) => {
      const cpus = nodeAllowed(n);
      // torch takes an allowed CPU of every node, and fails on a node it may use none of.
      if (cpus.length === 0) throw new NumaBindingError(`the agent may use no CPU of NUMA node ${n}`);
      return t.socket[Math.min(...cpus)]!;
    };
    const s = socketOf(node);
    cpus = Object.keys(t.nodeCpus).map(Number).filter((n) => socketOf(n) === s).flatMap(nodeAllowed);
  } else if (mode === 'exclusive') {
    const gpus = gpusOfNode();
    const rel = gpus.indexOf(gpu);
    const cores = [...groupBy(nodeAllowed(node), (c) => Math.min(...(t.siblings[c] ?? [c]))).entries()].sort((a, b) => a[0] - b[0]);
    const per = Math.floor(cores.length / gpus.length);
    const extra = cores.length % gpus.length;
    if (per < 1) throw new NumaBindingError(`there are only ${cores.length} physical cores on NUMA node ${node}, but ${gpus.length} GPUs on it`);
    const start = rel * per + Math.min(rel, extra);
    cpus = cores.slice(start, start + per + (rel < extra ? 1 : 0)).flatMap(([, c]) => c);
  } else {
    const gpus = gpusOfNode();
    const rel = gpus.indexOf(gpu);
    // Caches with more CPUs first, then by their lowest CPU.
    const caches = [...groupBy(nodeAllowed(node), (c) => Math.min(...(t.maxCache[c] ?? [c]))).entries()].sort((a, b) => b[1].length - a[1].length || a[0] - b[0]);
    cpus = caches[rel % caches.length]![1];
  }
  if (cpus.length === 0) throw new NumaBindingError('must bind to a non-empty set of CPUs');
  return sorted(cpus);
}

const SYS = '/sys/devices/system';
const read = (file: string) => readFileSync(file, 'utf8').trim();

/** The NUMA nodes of this machine (torch: /sys/devices/system/node/possible). */
export function numaNodes(): number[] {
  try {
    return parseCpuList(read(`${SYS}/node/possible`));
  } catch {
    return [0]; // no NUMA support in the kernel: one node
  }
}

/** The agent's own CPU affinity (Cpus_allowed_list), torch's `os.sched_getaffinity(0)`. */
export function allowedCpus(): number[] {
  const line = /^Cpus_allowed_list:\s*(.*)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return parseCpuList(line?.[1] ?? '');
}

/**
 * GPU NUMA nodes by CUDA index: nvidia-smi's PCI addresses (in its order, which is CUDA's for
 * CUDA_DEVICE_ORDER=PCI_BUS_ID), narrowed by the agent's CUDA_VISIBLE_DEVICES when it lists
 * indices; -1 (one node) reads as 0, as in torch.
 */
export function gpuNumaNodes(env: NodeJS.ProcessEnv): number[] {
  let out: string;
  try {
    out = execFileSync('nvidia-smi', ['--query-gpu=pci.bus_id', '--format=csv,noheader'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    throw new NumaBindingError('no NVIDIA GPU found (nvidia-smi): torch binds each local rank to the CPUs near its GPU');
  }
  const nodes = out.split('\n').map((l) => l.trim()).filter(Boolean).map((bus) => {
    // nvidia-smi: 00000000:DC:00.0; sysfs: 0000:dc:00.0
    const addr = bus.toLowerCase().replace(/^0000(?=[0-9a-f]{4}:)/, '');
    return Math.max(Number(read(`/sys/bus/pci/devices/${addr}/numa_node`)), 0);
  });
  const visible = env.CUDA_VISIBLE_DEVICES;
  if (visible === undefined || !/^\s*\d+(\s*,\s*\d+)*\s*$/.test(visible)) return nodes;
  return visible.split(',').map((i) => nodes[Number(i)] ?? -1).filter((n) => n >= 0);
}

/** This machine's topology for `bindCpus` (sysfs); the GPUs' nodes come from `gpuNumaNodes`. */
export function readTopology(): Omit<NumaTopology, 'gpuNodes'> {
  const nodeCpus: Record<number, number[]> = {};
  for (const n of numaNodes()) nodeCpus[n] = parseCpuList(read(`${SYS}/node/node${n}/cpulist`));
  const siblings: Record<number, number[]> = {};
  const maxCache: Record<number, number[]> = {};
  const socket: Record<number, number> = {};
  for (const cpu of Object.values(nodeCpus).flat()) {
    const dir = `${SYS}/cpu/cpu${cpu}`;
    siblings[cpu] = parseCpuList(read(`${dir}/topology/thread_siblings_list`));
    socket[cpu] = Number(read(`${dir}/topology/physical_package_id`));
    let level = -1;
    for (const entry of readdirSync(`${dir}/cache`).filter((e) => /^index\d+$/.test(e))) {
      const c = `${dir}/cache/${entry}`;
      if (!['Unified', 'Data'].includes(read(`${c}/type`))) continue;
      const l = Number(read(`${c}/level`));
      if (l <= level) continue;
      level = l;
      maxCache[cpu] = parseCpuList(read(`${c}/shared_cpu_list`));
    }
  }
  return { nodeCpus, allowed: allowedCpus(), siblings, maxCache, socket };
}

/** A binding plan: each local rank's CPU list and the command that applies it; null when none changes anything. */
export interface NumaPlan {
  /** `numactl --physcpubind=` (torch's) or, where there is no numactl, util-linux's `taskset -c`. */
  tool: 'numactl' | 'taskset';
  cpus: string[];
}

/**
 * The CPUs of each local rank as torch binds them, or null when every rank would be bound to all
 * the CPUs the agent may use anyway (`node` or `socket` on a machine with one NUMA node): then
 * nothing is done. Local rank N is GPU N; on a machine with one NUMA node and no NVIDIA GPU,
 * every local rank counts as a GPU on that node (so `exclusive` splits the cores between them).
 */
export function planNumaBinding(mode: NumaMode, localWorldSize: number, env: NodeJS.ProcessEnv): NumaPlan | null {
  const single = numaNodes().length <= 1;
  let gpuNodes: number[];
  try {
    gpuNodes = gpuNumaNodes(env);
  } catch (err) {
    if (!single) throw err;
    gpuNodes = Array.from({ length: localWorldSize }, () => 0);
  }
  const topo = { ...readTopology(), gpuNodes };
  const cpus = Array.from({ length: localWorldSize }, (_, rank) => cpuListString(bindCpus(mode, rank, topo)));
  const all = cpuListString(topo.allowed);
  if (cpus.every((c) => c === all)) return null;
  const tool = onPath('numactl') ? 'numactl' : onPath('taskset') ? 'taskset' : null;
  if (tool === null) throw new NumaBindingError('numactl is required for NUMA binding (Debian: apt-get install numactl)');
  return { tool, cpus };
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).filter(Boolean).some((dir) => {
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** torch's `_assemble_numactl_command_args` (`numactl --physcpubind=CPUS file args…`), or `taskset -c CPUS file args…`. */
export function withBinding(cmd: { file: string; args: string[] }, tool: NumaPlan['tool'], cpus: string): { file: string; args: string[] } {
  const how = tool === 'numactl' ? [`--physcpubind=${cpus}`] : ['-c', cpus];
  return { file: tool, args: [...how, cmd.file, ...cmd.args] };
}
