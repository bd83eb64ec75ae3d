/** `telastic nodes` as text: a row per node, a quarantined node's since and why beneath it. */
import { nodesText } from '../../src/ledger/nodes-text';
import type { NodeSummary } from '../../src/ledger/nodes';

const node = (over: Partial<NodeSummary>): NodeSummary => ({ nodeId: 'a', failures: 0, recentFailures: 0, lastFailure: null, quarantined: null, releasedAt: null, ...over });

test('rows line up; a quarantined node says since when and why; only a message\'s first line shows', () => {
  const text = nodesText([
    node({
      nodeId: 'gpu-node-17', failures: 12, recentFailures: 3,
      lastFailure: { at: '2025-01-01T12:00:00.000Z', jobId: 'job-9', round: 4, rank: 7, exitCode: null, signal: 'SIGSEGV', message: 'Fatal Python error\nStack:' },
      quarantined: { since: '2025-01-01T12:00:01.000Z', reason: '3 failures within 1h' },
    }),
    node({ nodeId: 'b', failures: 1, lastFailure: { at: '2025-01-01T11:00:00.000Z', jobId: 'job-8', round: 1, rank: null, exitCode: null, signal: null, message: 'node lost: heartbeat timeout' }, releasedAt: '2025-01-01T11:30:00.000Z' }),
  ], '24h');
  expect(text.split('\n')).toEqual([
    'node         failures  last 24h  state        last failure',
    'gpu-node-17        12         3  quarantined  2025-01-01T12:00:00.000Z job job-9 round 4: node gpu-node-17 rank 7 killed by SIGSEGV: Fatal Python error',
    '             quarantined since 2025-01-01T12:00:01.000Z: 3 failures within 1h',
    'b                   1         0  released     2025-01-01T11:00:00.000Z job job-8 round 1: node b lost: heartbeat timeout',
    '             released 2025-01-01T11:30:00.000Z; failures before it no longer count',
  ]);
});

test('no node yet', () => {
  expect(nodesText([], '24h')).toBe('no node has failed or been quarantined');
});
