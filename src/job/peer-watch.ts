/**
 * Peer watch (issue 21): during a round each node's agent holds one TCP connection to the agent
 * of another member, so that a node killed with SIGKILL is noticed in milliseconds (the kernel
 * closes a dead process's sockets at once) rather than at the heartbeat timeout. A frozen node
 * (SIGSTOP) keeps its sockets open and is still caught by the heartbeat timeout.
 *
 * Topology: a ring by group rank. Group rank i connects to group rank (i + 1) mod n, so every
 * node holds one outgoing and one incoming connection whatever the job's size (O(1) per node,
 * unlike a star on group rank 0, whose agent would hold n - 1), and every member is watched by
 * exactly one other (its predecessor). Only the connecting side blames: the one that holds the
 * socket it opened to a peer knows whom it watches, and one watcher per node means one report
 * per lost node. A ring of one has no peer.
 *
 * Pure decisions only; the sockets live in src/agent/peer-watch.ts.
 */
import type { Failure, NodeOutcome } from './state';

/** The agent a node watches in a round: its advertised address and the agent's watch port. */
export interface WatchTarget {
  nodeId: string;
  addr: string;
  port: number;
}

/**
 * Each participant's target, in group-rank order: the next one around the ring. Undefined for a
 * participant when the ring has one node, or when its successor's agent gave no watch port (an
 * agent of an older build: that node is watched by heartbeats only).
 */
export function watchTargets(participants: { nodeId: string; address: string }[], ports: Record<string, number | undefined>): (WatchTarget | undefined)[] {
  const n = participants.length;
  return participants.map((_, i) => {
    if (n < 2) return undefined;
    const next = participants[(i + 1) % n];
    const port = ports[next.nodeId];
    return port === undefined ? undefined : { nodeId: next.nodeId, addr: next.address, port };
  });
}

/** How a watcher's connection to its peer ended, as the agent saw it. */
export interface WatchClose {
  /** The peer's agent answered the watcher's hello: it holds the connection for this round. */
  armed: boolean;
  /** The peer's agent said its round ended (its workers stopped normally) before the close. */
  bye: boolean;
  /** The watcher itself closed it (its own round ended). */
  closedByUs: boolean;
  /** `ECONNRESET`, `ECONNREFUSED`, … when the socket failed; null on a plain EOF. */
  error: string | null;
}

/**
 * Whether a close is evidence that the peer's agent is gone: a close of a connection the peer's
 * agent had answered, that the watcher did not cause and the peer did not announce. A connection
 * never answered (refused, timed out, or to a process that is not a peer agent) blames no one: a
 * wrong address or a port taken over must not drop a healthy node every round; the heartbeat
 * timeout still notices a node that died before its watcher connected.
 */
export function peerGone(c: WatchClose): boolean {
  return c.armed && !c.bye && !c.closedByUs;
}

/** The line a watcher reports: `peer b's agent connection closed (ECONNRESET), seen by a`. */
export function peerLostMessage(peer: string, watcher: string, error: string | null): string {
  return `peer watch: peer ${peer}'s agent connection closed${error ? ` (${error})` : ''}, seen by ${watcher}`;
}

/**
 * What a group makes of a watcher's report: the peer is lost (blamed, like a node lost by
 * heartbeat timeout, only sooner), the watcher is a victim whose workers were stopped. A peer
 * that already has an outcome of its own (it failed, or was lost first) keeps it.
 */
export function peerLostOutcomes(watcher: string, peer: string, message: string, known: (nodeId: string) => boolean): NodeOutcome[] {
  const out: NodeOutcome[] = [{ nodeId: watcher, kind: 'stopped' }];
  if (!known(peer)) out.push({ nodeId: peer, kind: 'lost', why: message });
  return out;
}

/** Whether a failure is a peer watch's report (for status lines and tests). */
export function isPeerWatchLoss(f: Failure | null): boolean {
  return f !== null && f.rank === null && (f.message ?? '').includes('peer watch: ');
}
