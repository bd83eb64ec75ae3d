/**
 * `telastic nodes` as text: one row per node (failures in all and within the window, whether it is
 * quarantined, its last failure in a phrase), and under a quarantined node since when and why.
 * Pure; user text goes through `printable`, and only a message's first line is shown.
 */
import { describeFailure, printable } from './format';
import type { NodeSummary } from './nodes';

export function nodesText(nodes: NodeSummary[], windowLabel: string): string {
  if (nodes.length === 0) return 'no node has failed or been quarantined';
  const idWidth = Math.max(4, ...nodes.map((n) => printable(n.nodeId).length));
  const recentHead = `last ${windowLabel}`;
  const header = `${'node'.padEnd(idWidth)}  failures  ${recentHead.padStart(8)}  ${'state'.padEnd(11)}  last failure`;
  const rows = nodes.flatMap((n) => {
    const state = n.quarantined ? 'quarantined' : n.releasedAt ? 'released' : 'ok';
    const last = n.lastFailure
      ? `${n.lastFailure.at} job ${n.lastFailure.jobId} round ${n.lastFailure.round}: ${describeFailure({ nodeId: n.nodeId, ...n.lastFailure, message: n.lastFailure.message?.split('\n')[0] ?? null })}`
      : '-';
    const row = `${printable(n.nodeId).padEnd(idWidth)}  ${String(n.failures).padStart(8)}  ${String(n.recentFailures).padStart(Math.max(8, recentHead.length))}  ${state.padEnd(11)}  ${printable(last)}`;
    const more = n.quarantined
      ? [`${' '.repeat(idWidth)}  quarantined since ${n.quarantined.since}: ${printable(n.quarantined.reason)}`]
      : n.releasedAt ? [`${' '.repeat(idWidth)}  released ${n.releasedAt}; failures before it no longer count`] : [];
    return [row, ...more];
  });
  return [header, ...rows].join('\n');
}
