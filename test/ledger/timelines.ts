/** Hand-built job timelines for the ledger's pure readers: times are seconds after a fixed start. */
import type { RecordedJob } from '../../src/ledger/figures';
import type { JobTimeline } from '../../src/ledger/timeline';

export const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);
export const at = (s: number) => new Date(T0 + s * 1000).toISOString();
export const members = (...ids: string[]) => ids.map((nodeId, groupRank) => ({ nodeId, groupRank, address: `10.0.0.${groupRank + 1}` }));

type Round = JobTimeline['rounds'][number];

export function round(n: number, seq: number, from: number, to: number | null, reason: string | null, ids: string[], worldSize = ids.length * 2): Round {
  return { seq, round: n, members: members(...ids), worldSize, startedAt: at(from), endedAt: to === null ? null : at(to), endReason: reason, endedSeq: to === null ? null : seq + 1 };
}

export function job(over: Partial<Omit<JobTimeline, 'job'>> = {}, endedAt: number | null = 100, state = 'succeeded'): RecordedJob {
  return {
    job: {
      jobId: 'job-1', state, pool: null, startedAt: at(0), endedAt: endedAt === null ? null : at(endedAt), endReason: null,
      spec: { jobId: 'job-1', minNodes: 1, maxNodes: 3, nprocPerNode: 2, maxRestarts: 3, entrypoint: { script: 'train.py', args: ['--epochs', '3'], module: false, noPython: false } },
    },
    rounds: [],
    failures: [],
    checkpoints: [],
    nodeEvents: [],
    ...over,
  };
}

/**
 * Four rounds in 100 s: a worker failure (10 s to recover), a lost node (2 s), a membership change
 * (none: the next round starts as this one ends), then success; 76 s of them productive.
 */
export function fourRounds(): RecordedJob {
  return job({
    rounds: [
      round(1, 10, 10, 40, 'failure: Traceback (most recent call last): boom', ['a', 'b']),
      round(2, 20, 50, 70, 'failure: node lost: missed its heartbeat for 10s', ['a', 'b'], 3),
      round(3, 30, 72, 90, 'membership change', ['a', 'c']),
      round(4, 40, 90, 98, 'succeeded', ['a', 'c', 'd'], 6),
    ],
    failures: [
      { seq: 12, round: 1, nodeId: 'b', rank: 3, exitCode: 1, signal: null, message: 'Traceback (most recent call last): boom', at: at(40) },
      { seq: 22, round: 2, nodeId: 'b', rank: null, exitCode: null, signal: null, message: 'node lost: missed its heartbeat for 10s', at: at(70) },
    ],
    checkpoints: [{ seq: 25, path: '/ckpt/step-200', step: 200, at: at(71), chosenForRound: 3 }],
    nodeEvents: [
      { seq: 2, nodeId: 'a', event: 'join', cause: null, at: at(10) }, // with round 1's start: seq, not time or kind, orders them
      { seq: 23, nodeId: 'b', event: 'lost', cause: 'lost', at: at(70) },
    ],
  });
}
