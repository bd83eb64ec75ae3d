/**
 * A pool job's membership, as pure functions: granted nodes join like nodes of `telastic run`,
 * nodes the job no longer holds go back, and a pool job keeps no hot spares (workflows/pool-link.ts
 * carries them to the pool).
 */
import { applyJoin, planRound } from './decide';
import type { JobState } from './state';
import type { GrantedNode, JobRequest, ReleaseReason } from '../pool/state';

/** Nodes granted by the pool that the job no longer holds, with why they went. */
export function releases(s: JobState): JobRequest['release'] {
  const holding = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
  return s.poolNodes
    .filter((n) => !holding.has(n))
    .map((nodeId) => ({ nodeId, reason: (s.departed.find((x) => x.nodeId === nodeId)?.reason ?? 'released') as ReleaseReason }));
}

/** Granted nodes join as newcomers, with the job's own launch (the pool runs no other). */
export function applyGrant(s: JobState, nodes: GrantedNode[], now: number): JobState {
  let next = s;
  for (const n of nodes) {
    const req = { nodeId: n.nodeId, address: n.address, slots: s.spec.nprocPerNode, entrypoint: s.spec.entrypoint, role: s.spec.role };
    next = applyJoin(next, req, now);
  }
  return { ...next, poolNodes: [...new Set([...next.poolNodes, ...nodes.map((n) => n.nodeId)])] };
}

/** Pool jobs keep no hot spares: nodes beyond maxNodes (after a scale down) go back to the pool. */
export function dropSpares(s: JobState): JobState {
  const { spares } = planRound(s);
  if (spares.length === 0) return s;
  const ids = new Set(spares.map((n) => n.nodeId));
  return { ...s, waiting: s.waiting.filter((n) => !ids.has(n.nodeId)) };
}
