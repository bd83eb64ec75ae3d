/**
 * A pool job's side of its pool (workflows/pool.ts): it tells the pool what it wants (its min
 * and max nodes) and gives back the nodes it no longer holds, in one signal per change; the pool
 * grants nodes back as `poolGrant` signals, which join the job like nodes of `telastic run`.
 */
import * as wf from '@temporalio/workflow';
import { poolWorkflowId, type JobRequest, type ReleaseReason } from '../src/pool/state';
import type { JobState } from '../src/job/state';
import type { GrantedNode } from './pool-messages';
import { poolJobSignal } from './pool-messages';
import * as d from '../src/job/decide';
import { timer } from './timers';

type Get = () => JobState;
type Set = (s: JobState) => void;

/** How long a job waits before asking a pool that does not exist yet (no agent registered) again. */
const RETRY_MS = 2000;

/** Nodes granted by the pool that the job no longer holds, with why they went. */
export function releases(s: JobState): JobRequest['release'] {
  const holding = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
  return (s.poolNodes ?? [])
    .filter((n) => !holding.has(n))
    .map((nodeId) => ({ nodeId, reason: (s.departed.find((x) => x.nodeId === nodeId)?.reason ?? 'released') as ReleaseReason }));
}

/** Granted nodes join as newcomers, with the job's own launch (the pool runs no other). */
export function applyGrant(s: JobState, nodes: GrantedNode[], now: number): JobState {
  let next = s;
  for (const n of nodes) {
    const req = { nodeId: n.nodeId, address: n.address, slots: s.spec.nprocPerNode, entrypoint: s.spec.entrypoint, role: s.spec.role };
    next = d.applyJoin(next, req, now);
  }
  return { ...next, poolNodes: [...new Set([...(next.poolNodes ?? []), ...nodes.map((n) => n.nodeId)])] };
}

function request(s: JobState, release: JobRequest['release'], done: boolean): JobRequest {
  return { jobId: s.spec.jobId, minNodes: s.spec.minNodes, maxNodes: s.spec.maxNodes, slots: s.spec.nprocPerNode, release, done };
}

/** Keep the pool informed for the life of this run; returns when `stop()` holds. */
export async function linkToPool(pool: string, get: Get, set: Set, stop: () => boolean): Promise<void> {
  const handle = wf.getExternalWorkflowHandle(poolWorkflowId(pool));
  const wants = () => `${get().spec.minNodes}:${get().spec.maxNodes}`;
  let told = '';
  while (!stop()) {
    await wf.condition(() => stop() || wants() !== told || releases(get()).length > 0);
    if (stop()) return;
    const want = wants();
    const release = releases(get());
    try {
      await handle.signal(poolJobSignal, request(get(), release, false));
      told = want;
      // A node granted again while the signal was in flight is held again: it stays.
      const gone = new Set(release.map((r) => r.nodeId));
      const s = get();
      const holding = new Set([...s.members, ...s.waiting].map((n) => n.nodeId));
      set({ ...s, poolNodes: (s.poolNodes ?? []).filter((n) => !gone.has(n) || holding.has(n)) });
    } catch (err) {
      wf.log.warn(`pool ${pool} did not take the request; asking again in ${RETRY_MS / 1000}s`, { error: String(err) });
      await wf.sleep(RETRY_MS, timer(`retry: ask pool ${pool} again`));
    }
  }
}

/** The job ended: every node it holds goes back to the pool. Never throws. */
export async function leavePool(pool: string, s: JobState): Promise<void> {
  await wf.CancellationScope.nonCancellable(() =>
    wf.getExternalWorkflowHandle(poolWorkflowId(pool)).signal(poolJobSignal, request(s, [], true)).catch((err: unknown) => {
      wf.log.warn(`pool ${pool} did not hear that the job ended`, { error: String(err) });
    }),
  );
}

/** Pool jobs keep no hot spares: nodes beyond maxNodes (after a scale down) go back to the pool. */
export function dropSpares(s: JobState): JobState {
  const { spares } = d.planRound(s);
  if (spares.length === 0) return s;
  const ids = new Set(spares.map((n) => n.nodeId));
  return { ...s, waiting: s.waiting.filter((n) => !ids.has(n.nodeId)) };
}
