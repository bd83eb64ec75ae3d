/**
 * `bindCpus` against torch's own torch.numa.binding on the same topologies: machines this one is
 * not (two NUMA nodes, two sockets, hyperthreads, several L3 caches, uneven GPUs per node). torch
 * reads sysfs and CUDA through small helpers; they are replaced by the same data, so what is
 * compared is torch's algorithm, mode by mode, GPU by GPU.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { NUMA_MODES } from '../../../src/config/values';
import { bindCpus, cpuListString, parseCpuList, withBinding, type NumaTopology } from '../../../src/agent/workers/numa';
import { ROOT } from '../../../test-support/agents';

const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');

const TORCH = `
import json, sys
import torch.numa.binding as b
t = json.loads(sys.argv[1])
cpus = {int(k): set(v) for k, v in t["nodeCpus"].items()}
b._get_gpu_count = lambda: len(t["gpuNodes"])
b._get_numa_node_index_for_gpu_index = lambda *, gpu_index: t["gpuNodes"][gpu_index]
b._get_cpu_indices_for_numa_node_MAYBE_NOT_ALLOWED = lambda *, numa_node_index: cpus[numa_node_index]
b._get_allowed_cpu_indices_for_current_thread = lambda: set(t["allowed"])
b._get_logical_cpu_indices_sharing_same_physical_core_as = lambda *, logical_cpu_index: set(t["siblings"][str(logical_cpu_index)])
b._get_logical_cpus_sharing_same_max_level_cache_as = lambda *, logical_cpu_index: set(t["maxCache"][str(logical_cpu_index)])
b._get_socket_index_for_cpu = lambda *, cpu_index: t["socket"][str(cpu_index)]
b._get_systemwide_numa_node_indices = lambda: set(cpus)
out = {}
for mode in b.AffinityMode:
    sets = []
    for g in range(len(t["gpuNodes"])):
        try:
            sets.append(sorted(b._get_logical_cpus_to_bind_to(gpu_index=g, numa_options=b.NumaOptions(affinity_mode=mode))))
        except (RuntimeError, ValueError):
            sets.append("error")
    out[mode.value] = sets
print(json.dumps(out))
`;

function torchSets(t: NumaTopology): Record<string, (number[] | 'error')[]> {
  const r = spawnSync(PYTHON, ['-c', TORCH, JSON.stringify(t)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as Record<string, (number[] | 'error')[]>;
}

function ours(t: NumaTopology): Record<string, (number[] | 'error')[]> {
  const out: Record<string, (number[] | 'error')[]> = {};
  for (const mode of NUMA_MODES) {
    out[mode] = t.gpuNodes.map((_, g) => {
      try {
        return bindCpus(mode, g, t);
      } catch {
        return 'error' as const;
      }
    });
  }
  return out;
}

/** `nodes` NUMA nodes of `cores` cores × `threads` hyperthreads, `perCache` cores per L3, `perSocket` nodes per socket. */
function machine(o: { nodes: number; cores: number; threads: number; perCache: number; perSocket: number; gpuNodes: number[]; allowed?: number[] }): NumaTopology {
  const t: NumaTopology = { nodeCpus: {}, allowed: [], gpuNodes: o.gpuNodes, siblings: {}, maxCache: {}, socket: {} };
  const physical = o.nodes * o.cores;
  for (let n = 0; n < o.nodes; n++) {
    t.nodeCpus[n] = [];
    for (let c = 0; c < o.cores; c++) {
      const core = n * o.cores + c;
      // Linux numbers the first thread of every core first, then the second threads.
      const threads = Array.from({ length: o.threads }, (_, i) => core + i * physical);
      const cacheFirst = n * o.cores + Math.floor(c / o.perCache) * o.perCache;
      const cache = Array.from({ length: o.perCache }, (_, k) => cacheFirst + k).filter((x) => x < (n + 1) * o.cores).flatMap((k) => Array.from({ length: o.threads }, (_, i) => k + i * physical));
      for (const cpu of threads) {
        t.nodeCpus[n]!.push(cpu);
        t.siblings[cpu] = threads;
        t.maxCache[cpu] = cache;
        t.socket[cpu] = Math.floor(n / o.perSocket);
      }
    }
  }
  t.allowed = o.allowed ?? Object.values(t.nodeCpus).flat();
  return t;
}

describe('bindCpus is torch.numa.binding', () => {
  it.each([
    ['2 nodes on 2 sockets, 8 cores × 2 threads each, 2 GPUs per node', machine({ nodes: 2, cores: 8, threads: 2, perCache: 4, perSocket: 1, gpuNodes: [0, 0, 1, 1] })],
    ['4 nodes on 2 sockets, 3 GPUs on node 0 (uneven cores), 1 on node 3', machine({ nodes: 4, cores: 5, threads: 2, perCache: 2, perSocket: 2, gpuNodes: [0, 0, 0, 3] })],
    ['an agent confined to part of node 1 (a cgroup cpuset)', machine({ nodes: 2, cores: 4, threads: 1, perCache: 4, perSocket: 1, gpuNodes: [1, 1], allowed: [4, 5, 6] })],
    ['more GPUs than cores on a node: exclusive fails, as torch', machine({ nodes: 2, cores: 2, threads: 1, perCache: 2, perSocket: 1, gpuNodes: [0, 0, 0, 1] })],
    ['one node, 2 cores, 2 local ranks (this machine)', machine({ nodes: 1, cores: 2, threads: 1, perCache: 2, perSocket: 1, gpuNodes: [0, 0] })],
  ])('%s', (_, t) => {
    expect(ours(t)).toEqual(torchSets(t));
  }, 60_000);
});

describe('the binding command', () => {
  it('is torch\'s numactl --physcpubind, or taskset -c, in front of the worker command', () => {
    const cmd = { file: 'python3', args: ['-u', 't.py'] };
    expect(withBinding(cmd, 'numactl', '0-3,8')).toEqual({ file: 'numactl', args: ['--physcpubind=0-3,8', 'python3', '-u', 't.py'] });
    expect(withBinding(cmd, 'taskset', '1')).toEqual({ file: 'taskset', args: ['-c', '1', 'python3', '-u', 't.py'] });
  });

  it('writes and reads sysfs CPU lists as torch does', () => {
    expect(cpuListString([7, 0, 1, 2, 4, 6])).toBe('0-2,4,6-7');
    expect(parseCpuList('0-2,4,6-7\n')).toEqual([0, 1, 2, 4, 6, 7]);
  });
});
