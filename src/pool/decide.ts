/**
 * A pool's decisions as pure functions of its state (src/pool/state.ts): who registers, who is
 * lost, what jobs give back, and which free node goes to which job. The pool workflow applies
 * them and carries out their effects (grants and leaves signalled to jobs). Times come in as
 * arguments; nothing here touches the clock or I/O.
 *
 * Granting, first come first served: every job in arrival order gets nodes up to its minimum; a
 * job that cannot reach its minimum keeps what it got (those nodes wait for it) and jobs behind
 * it get nothing, so a large job is never starved by small ones. Only once every job holds its
 * minimum do jobs grow, again in arrival order, up to their maximum.
 */
import type { DepartRequest, GrantedNode, JobRequest, PoolJob, PoolNode, PoolState, RegisterRequest } from './state';

/** Nodes given to one job in one decision: the pool signals them to the job as joins. */
export interface Grant {
  jobId: string;
  nodes: GrantedNode[];
}

/** A granted node whose agent is leaving: the job is told, as a node's own leave. */
export interface Leave {
  jobId: string;
  nodeId: string;
}

const ENDED_KEPT = 100;

function update(s: PoolState, nodeId: string, f: (n: PoolNode) => PoolNode | null): PoolState {
  const nodes: PoolNode[] = [];
  for (const n of s.nodes) {
    const next = n.nodeId === nodeId ? f(n) : n;
    if (next) nodes.push(next);
  }
  return { ...s, nodes };
}

/**
 * An agent registers. A new node is free. The same run of an agent registering again after its
 * node was marked lost (its lease lapsed, say through a Temporal outage, but it is alive) goes
 * back to the job that still holds it, or is free. A new run of a known node (the agent
 * restarted: whatever it ran is gone) is free with its new incarnation; a job that held it
 * learns of the loss from its own heartbeats.
 */
export function register(s: PoolState, req: RegisterRequest, now: number): PoolState {
  const known = s.nodes.find((n) => n.nodeId === req.nodeId);
  const fresh: PoolNode = { ...req, state: 'free', jobId: null, since: now };
  if (!known) return { ...s, nodes: [...s.nodes, fresh] };
  if (known.incarnation !== req.incarnation) return update(s, req.nodeId, () => fresh);
  if (known.state !== 'lost') return s; // a repeated register
  return update(s, req.nodeId, (n) => ({ ...n, state: n.jobId ? 'granted' : 'free', since: now }));
}

/** An agent leaves for good. A free node goes at once; a granted one drains through its job. */
export function depart(s: PoolState, req: DepartRequest, now: number): { state: PoolState; leave: Leave | null } {
  const n = s.nodes.find((x) => x.nodeId === req.nodeId);
  if (!n || n.incarnation !== req.incarnation) return { state: s, leave: null };
  if (n.state === 'granted' && n.jobId) {
    return { state: update(s, n.nodeId, (x) => ({ ...x, state: 'draining', since: now })), leave: { jobId: n.jobId, nodeId: n.nodeId } };
  }
  if (n.state === 'draining') return { state: s, leave: null };
  return { state: update(s, n.nodeId, () => null), leave: null };
}

/**
 * The pool's lease on one run of a node's agent ended without a cancel: that agent is gone, or
 * cut off. A granted node stays its job's (the job judges its own nodes by its own heartbeats and
 * releases it if it lost it); it is granted to nobody else until its agent registers again.
 */
export function leaseLost(s: PoolState, nodeId: string, incarnation: string, now: number): PoolState {
  return update(s, nodeId, (n) => {
    if (n.incarnation !== incarnation || n.state === 'lost') return n;
    if (n.state === 'draining') return null;
    return { ...n, state: 'lost', since: now };
  });
}

/**
 * A job's request: what it gives back, then what it wants (or that it ended). Releases of nodes
 * the job does not hold (any more) change nothing. Requests of a job that ended are ignored.
 */
export function jobRequest(s: PoolState, req: JobRequest, now: number): PoolState {
  if (s.ended.includes(req.jobId)) return s;
  let next = s;
  for (const r of req.release) {
    next = update(next, r.nodeId, (n) => {
      if (n.jobId !== req.jobId) return n;
      if (n.state === 'draining') return null;
      if (r.reason === 'lost' || n.state === 'lost') return { ...n, state: 'lost', jobId: null, since: now };
      return { ...n, state: 'free', jobId: null, since: now };
    });
  }
  const drained = req.release.filter((r) => r.reason === 'drained').map((r) => r.nodeId);
  if (req.done) {
    const back = (n: PoolNode): PoolNode[] => (n.state === 'draining' ? [] : [{ ...n, state: n.state === 'lost' ? 'lost' : 'free', jobId: null, since: now }]);
    next = { ...next, nodes: next.nodes.flatMap((n) => (n.jobId !== req.jobId ? [n] : back(n))) };
    return { ...next, jobs: next.jobs.filter((j) => j.jobId !== req.jobId), ended: [...next.ended, req.jobId].slice(-ENDED_KEPT) };
  }
  const { jobId, minNodes, maxNodes, slots } = req;
  const known = next.jobs.find((j) => j.jobId === jobId);
  const job: PoolJob = known
    ? { ...known, minNodes, maxNodes, slots, excluded: [...new Set([...known.excluded, ...drained])] }
    : { jobId, minNodes, maxNodes, slots, since: now, excluded: drained };
  return { ...next, jobs: known ? next.jobs.map((j) => (j.jobId === jobId ? job : j)) : [...next.jobs, job] };
}

/** Nodes a job holds: granted to it, draining out of it, or lost by the pool but not by the job. */
export function held(s: PoolState, jobId: string): PoolNode[] {
  return s.nodes.filter((n) => n.jobId === jobId && n.state !== 'free');
}

/** Give free nodes to jobs: minimums first in arrival order, then growth to maximums. */
export function allocate(s: PoolState, now: number): { state: PoolState; grants: Grant[] } {
  const free = s.nodes.filter((n) => n.state === 'free');
  const given = new Map<string, PoolNode[]>();
  const count = (j: PoolJob) => held(s, j.jobId).length + (given.get(j.jobId)?.length ?? 0);
  const give = (j: PoolJob, want: number): number => {
    let got = 0;
    for (let i = 0; i < free.length && got < want; ) {
      const n = free[i];
      if (n.slots >= j.slots && !j.excluded.includes(n.nodeId)) {
        given.set(j.jobId, [...(given.get(j.jobId) ?? []), n]);
        free.splice(i, 1);
        got++;
      } else i++;
    }
    return got;
  };
  let everyoneAtMin = true;
  for (const j of s.jobs) {
    const need = j.minNodes - count(j);
    if (need > 0 && give(j, need) < need) {
      everyoneAtMin = false;
      break; // first come, first served: nobody behind a job waiting for its minimum gets nodes
    }
  }
  if (everyoneAtMin) for (const j of s.jobs) give(j, j.maxNodes - count(j));
  if (given.size === 0) return { state: s, grants: [] };
  const owner = new Map([...given].flatMap(([jobId, nodes]) => nodes.map((n) => [n.nodeId, jobId] as const)));
  const nodes = s.nodes.map((n) => (owner.has(n.nodeId) ? { ...n, state: 'granted' as const, jobId: owner.get(n.nodeId) as string, since: now } : n));
  const grants = [...given].map(([jobId, ns]) => ({ jobId, nodes: ns.map(({ nodeId, address, slots }) => ({ nodeId, address, slots })) }));
  return { state: { ...s, nodes }, grants };
}

/** A job the pool could not reach (it ended or never existed): its grants go back. */
export function jobGone(s: PoolState, jobId: string, now: number): PoolState {
  const held = s.nodes.filter((n) => n.jobId === jobId);
  return jobRequest(s, { jobId, minNodes: 1, maxNodes: 1, slots: 1, release: held.map((n) => ({ nodeId: n.nodeId, reason: 'released' })), done: true }, now);
}

/** What an agent learns about its node: cheap to answer, polled every second. */
export interface PoolNodeView {
  state: PoolNode['state'] | 'unknown';
  jobId: string | null;
  incarnation: string | null;
}

export function poolNodeView(s: PoolState, nodeId: string): PoolNodeView {
  const n = s.nodes.find((x) => x.nodeId === nodeId);
  return n ? { state: n.state, jobId: n.jobId, incarnation: n.incarnation } : { state: 'unknown', jobId: null, incarnation: null };
}
