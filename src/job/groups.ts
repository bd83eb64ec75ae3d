/**
 * How a job is sharded over Temporal executions, as pure functions (see DESIGN.md, Scale).
 *
 * A job is a tree: the job workflow decides; per round, group workflows of at most `groupSize`
 * nodes run the node activities and take their heartbeats; joins and leaves enter through lobby
 * workflows, `ceil(maxNodes / groupSize)` of them, which forward them to the job in batches.
 * So no execution's pending activities, signals or heartbeat rate grow with the job's size
 * beyond one group.
 */

/** Default nodes per group: 64 × (1 heartbeat / 3.3 s) ≈ 19 heartbeats/s per execution. */
export const DEFAULT_GROUP_SIZE = 64;

/** The per-execution heartbeat budget the interval is chosen to stay under. */
export const MAX_HEARTBEATS_PER_SECOND = 50;

/**
 * The whole round's heartbeat budget. Every heartbeat is one write of an execution's state on the
 * server, and so is every heartbeat timeout the server checks: at 2,048 nodes heartbeating every
 * 3.3 s against 10 s the nodes sent 615/s, a dev server on 2 cores recorded 436/s and ran its
 * heartbeat-timeout checks 39 s late, and live nodes were dropped for "no heartbeat within 10s"
 * while their round started (docs/scale.md). Rounds up to 1,000 nodes are not affected at the
 * defaults (runHeartbeatTimeoutMs).
 */
export const MAX_JOB_HEARTBEATS_PER_SECOND = 300;

/** Split participants (in group-rank order) into consecutive groups of at most `groupSize`. */
export function partition<T>(items: readonly T[], groupSize: number): T[][] {
  const size = Math.max(1, Math.floor(groupSize));
  const groups: T[][] = [];
  for (let i = 0; i < items.length; i += size) groups.push(items.slice(i, i + size));
  return groups;
}

/**
 * A round's groups in tiers (workflows/tier.ts) when the job would otherwise start more than
 * `max(2, groupSize)` group children in a phase: consecutive runs of at most that many groups;
 * null when the job starts the groups itself. Two tiers hold `groupSize²` groups (262,144 nodes
 * at the default 64).
 */
export function tiersOf<T>(groups: readonly T[], groupSize: number): T[][] | null {
  const fanOut = Math.max(2, Math.floor(groupSize));
  return groups.length > fanOut ? partition(groups, fanOut) : null;
}

/**
 * How often a node heartbeats its running activity. A third of the heartbeat timeout (so two
 * heartbeats may be late before a node is declared lost), slowed further when a full group
 * would exceed MAX_HEARTBEATS_PER_SECOND, but never past half the timeout. Loss detection is
 * unaffected (it is the timeout since the last heartbeat); stopping old workers after a failure
 * does not wait for a heartbeat either, because the next round's `prepare` stops them. A large
 * round keeps to MAX_JOB_HEARTBEATS_PER_SECOND through its timeout (runHeartbeatTimeoutMs).
 */
export function heartbeatIntervalMs(heartbeatTimeoutMs: number, groupSize: number): number {
  const third = heartbeatTimeoutMs / 3;
  const forRate = (groupSize / MAX_HEARTBEATS_PER_SECOND) * 1000;
  return Math.round(Math.min(heartbeatTimeoutMs / 2, Math.max(third, forRate)));
}

/**
 * The heartbeat timeout of a round's `runWorkers`: heartbeat_timeout, or longer when the round's
 * nodes heartbeating a third of it would exceed MAX_JOB_HEARTBEATS_PER_SECOND (3 × participants
 * / 300 s: 20.5 s at 2,048 nodes, 10.2 s at 1,024). A node whose agent dies is given away at once
 * by the peer that watches it (src/job/peer-watch.ts); this bound is for a frozen one.
 */
export function runHeartbeatTimeoutMs(heartbeatTimeoutMs: number, participants: number): number {
  return Math.max(heartbeatTimeoutMs, Math.round((3 * participants * 1000) / MAX_JOB_HEARTBEATS_PER_SECOND));
}

/** Lobbies of a job: enough that each receives the joins of about one group. */
export function lobbyCount(maxNodes: number, groupSize: number): number {
  return Math.max(1, Math.ceil(maxNodes / Math.max(1, groupSize)));
}

/** FNV-1a: a stable, well-spread hash of a node id (no crypto in workflow-safe code). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The lobby a node joins through; stable for a node id so its joins and leaves stay ordered. */
export function lobbyIndex(nodeId: string, lobbies: number): number {
  return fnv1a(nodeId) % Math.max(1, lobbies);
}

export function lobbyWorkflowId(jobId: string, index: number): string {
  return `${jobId}/lobby-${index}`;
}

/** Child workflow ids of a round: unique per job, round and group. */
export function groupWorkflowId(jobId: string, round: number, phase: 'prepare' | 'run', index: number): string {
  return `${jobId}/round-${round}/${phase}-${index}`;
}

/** Tier workflow ids of a round (workflows/tier.ts): unique per job, round and tier. */
export function tierWorkflowId(jobId: string, round: number, phase: 'prepare' | 'run', index: number): string {
  return `${jobId}/round-${round}/${phase}-tier-${index}`;
}

/**
 * How long a node new to the job (its first round, or back after it was dropped) may take to
 * pick up `prepare`: `prepare_timeout` is for known members, whose re-formation must stay fast;
 * a round that prepares many newcomers at once schedules that many activities at once, and on a
 * busy server they are picked up later (1,024 new nodes with 5 s: most dropped; with 60 s: 2,
 * docs/scale.md). `prepare_timeout` + 50 ms per newcomer, at most 120 s (or `prepare_timeout`
 * when that is longer).
 */
export function newcomerPrepareTimeoutMs(prepareTimeoutMs: number, newcomers: number): number {
  return Math.min(Math.max(prepareTimeoutMs, 120_000), prepareTimeoutMs + 50 * newcomers);
}

/**
 * How long a known member may take to pick up `prepare` in a round of `participants` nodes. A
 * round of one group keeps `prepare_timeout`, so small jobs re-form as fast as before. Past the
 * first group, 20 ms per participant, at most 60 s: one server dispatches (and cancels) a round's
 * activities at a fixed rate, so on a busy one the last member of a large round picks up its
 * `prepare` later than the first, though alive (1,024 nodes on 2 cores with 5 s: 130 healthy
 * members dropped, every re-formation dropped more, and the job never ran again; docs/scale.md).
 * A dead member costs this much longer only when nothing else gave it away first: a broken
 * collective or a peer watch (src/job/peer-watch.ts) drops it before the round is prepared.
 */
export function memberPrepareTimeoutMs(prepareTimeoutMs: number, participants: number, groupSize: number): number {
  const beyondFirstGroup = Math.max(0, participants - Math.max(1, groupSize));
  return Math.max(prepareTimeoutMs, Math.min(60_000, prepareTimeoutMs + 20 * beyondFirstGroup));
}

/**
 * The slack a round of several groups gives a busy server, beyond the members' prepare bound:
 * - `runStartTimeoutMs`: how long a member may take to pick up `runWorkers`, as long as
 *   newcomers may take for `prepare` (newcomerPrepareTimeoutMs of all participants). Each answered
 *   `prepare` moments before, so it is alive; at 2,048 nodes on 2 cores whole groups' `runWorkers`
 *   were dispatched more than 45 s late, and the round formed again for nothing. A member that
 *   died in between is given away at once by the peer that watches it (src/job/peer-watch.ts).
 * - `runHeartbeatTimeoutMs`: the heartbeat timeout of `runWorkers` (runHeartbeatTimeoutMs).
 * Null for a round of one group: small jobs keep prepare_timeout and heartbeat_timeout.
 */
export function largeRoundSlack(
  rdzv: { prepareTimeoutMs: number; heartbeatTimeoutMs: number; groupSize: number },
  participants: number,
): { runStartTimeoutMs: number; runHeartbeatTimeoutMs: number } | null {
  if (participants <= rdzv.groupSize) return null;
  const members = memberPrepareTimeoutMs(rdzv.prepareTimeoutMs, participants, rdzv.groupSize);
  return {
    runStartTimeoutMs: Math.max(members, newcomerPrepareTimeoutMs(rdzv.prepareTimeoutMs, participants)),
    runHeartbeatTimeoutMs: runHeartbeatTimeoutMs(rdzv.heartbeatTimeoutMs, participants),
  };
}

/**
 * How long group `index` of a round of `groups` groups waits before it schedules its node
 * activities: 100 ms apart, all within 5 s. A round's activities all at once queue their starts
 * on the server; a start it records more than a second late, after matching gave up on it, is
 * delivered to no one, and the node is dropped as lost though alive (Temporal's sync match,
 * recordTaskStartedSyncMatchTimeout). At 2,048 nodes on 2 cores 1 to 5 of a round's starts were
 * lost that way, all among the first matched, and each cost the round.
 */
export function groupStartDelayMs(index: number, groups: number): number {
  return Math.round(index * Math.min(100, 5000 / Math.max(1, groups)));
}

/**
 * How a group of a large round schedules its node activities: 16 at a time, 250 ms apart (64
 * nodes over 0.75 s). The server records a group's starts one at a time (each holds the group
 * execution's lock for a write): 64 at once put the last of them past the second Temporal gives
 * a handed-over start, and a start recorded past it reaches no one. Staggering the groups alone
 * still lost 5 of 2,048 `runWorkers` starts in one round.
 */
export const START_BATCH = { size: 16, everyMs: 250 } as const;

/**
 * How often an agent asks the job about its own node (drained, dropped, rejected): every second
 * for small jobs, slower for large ones so that all agents together send at most about
 * 50 queries per second to the job, and at least every 30 s.
 */
export function agentPollMs(maxNodes: number): number {
  return Math.round(Math.min(30_000, Math.max(1000, (maxNodes / 50) * 1000)));
}

/**
 * How often a node the job has left idle (waiting, a spare, or one whose nudge never came) asks
 * the job about itself: agentPollMs up to 250 nodes (all agents together about 50 queries/s),
 * then maxNodes² / 12,500 s (so all together ask 12,500 / maxNodes times a second: 12/s at 1,024
 * nodes, 6/s at 2,048), at most every 10 minutes. Every node of a large job is idle while its
 * first round forms; at agentPollMs the 1,024 of them asked the job 50 times a second just when
 * it was busiest. Nudged nodes still ask at once, and a job's end reaches every agent without a
 * query (it waits for the workflow's result).
 */
export function idleAskMs(maxNodes: number): number {
  return Math.max(agentPollMs(maxNodes), Math.round(Math.min(600_000, (maxNodes * maxNodes) / 12.5)));
}

/**
 * Workflow task timeout of every telastic workflow: a frozen coordinator can hold a workflow task
 * it will never finish (its long poll is still open); the task is retried elsewhere after this.
 * Workflow tasks of jobs, groups and lobbies take milliseconds.
 */
export const WORKFLOW_TASK_TIMEOUT = '2s' as const;

/**
 * Group workflows' tasks are tiny (a few activities, no decisions): 1 s. A group's task that
 * landed on a frozen coordinator is retried elsewhere after this, and with one group per round
 * on a random worker that happens to half the groups of a frozen coordinator-node.
 */
export const GROUP_TASK_TIMEOUT = '1s' as const;
