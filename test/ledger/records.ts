/** Ledger records of one whole job, shared by the ledger's tests (and their child processes). */
import type { LedgerRecord } from '../../src/ledger/store';

export const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 12, 0, s)).toISOString();
export const members = (...ids: string[]) => ids.map((nodeId, groupRank) => ({ nodeId, groupRank, address: `10.0.0.${groupRank + 1}` }));

/** A whole job: two rounds, a node lost in the first, a checkpoint resumed from in the second. */
export function jobRecords(jobId: string): LedgerRecord[] {
  return [
    { kind: 'job', jobId, seq: 1, spec: { minNodes: 1, maxNodes: 2, script: 'train.py' }, state: 'waiting', at: at(0) },
    { kind: 'nodeEvent', jobId, seq: 2, nodeId: 'a', event: 'join', at: at(1) },
    { kind: 'nodeEvent', jobId, seq: 3, nodeId: 'b', event: 'join', at: at(2) },
    { kind: 'roundStarted', jobId, seq: 4, round: 1, members: members('a', 'b'), worldSize: 2, at: at(3) },
    { kind: 'checkpoint', jobId, seq: 5, path: '/ckpt/step-100', step: 100, at: at(10) },
    { kind: 'nodeEvent', jobId, seq: 6, nodeId: 'b', event: 'lost', cause: 'heartbeat timeout', at: at(20) },
    { kind: 'failure', jobId, seq: 7, round: 1, nodeId: 'b', rank: null, exitCode: null, signal: null, message: 'node lost', at: at(20) },
    { kind: 'roundEnded', jobId, seq: 8, round: 1, reason: 'node lost', at: at(21) },
    { kind: 'checkpoint', jobId, seq: 9, path: '/ckpt/step-100', step: 100, at: at(22), chosenForRound: 2 },
    { kind: 'roundStarted', jobId, seq: 10, round: 2, members: members('a'), worldSize: 1, at: at(22) },
    { kind: 'roundEnded', jobId, seq: 11, round: 2, reason: 'succeeded', at: at(40) },
    { kind: 'jobEnded', jobId, seq: 12, state: 'succeeded', at: at(41) },
  ];
}
