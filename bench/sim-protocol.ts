/** Messages between bench/scale-sim.ts and its simulated-node processes (bench/sim-host.ts). */
import type { JobSpecInput } from '../src/job/spec';

export interface HostInit {
  t: 'init';
  address: string;
  nodeIds: string[];
  spec: JobSpecInput & { rdzv?: { groupSize?: number } };
  /** Activity long polls per node Worker; undefined = NODE_POLLERS, as a real agent. */
  pollers?: number;
  /** Node Workers sharing one NativeConnection (one gRPC channel). */
  nodesPerConnection: number;
  /** Joins in flight at once in this process. */
  joinWidth: number;
  /** Ask `nodeState` as agents do (on a nudge, and while in no round). */
  poll: boolean;
  /** Heartbeat as before groups (every 1 s): see SimNodeOptions.oldHeartbeat. */
  oldHeartbeat: boolean;
}

export type ToHost = HostInit | { t: 'join' } | { t: 'lose'; nodeId: string } | { t: 'pause'; nodeId: string; ms: number } | { t: 'finish' } | { t: 'stats' } | { t: 'exit' };

export type FromHost =
  | { t: 'ready'; createMs: number; rssKb: number }
  | { t: 'joined'; firstAt: number; lastAt: number; errors: number }
  | { t: 'running'; items: { nodeId: string; round: number; at: number }[] }
  | { t: 'lost'; nodeId: string; at: number }
  | { t: 'paused'; nodeId: string; at: number }
  | { t: 'rejoined'; nodeId: string; at: number }
  | { t: 'stats'; at: number; beats: Record<string, number>; rssKb: number; warnings: Record<string, number>; nudges: number; queries: number }
  | { t: 'error'; message: string };
