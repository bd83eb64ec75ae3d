/** What the Temporal Web UI shows of a job: search attributes and the workflow's current details. */
import * as wf from '@temporalio/workflow';
import { describeFailure } from '../src/job/decide';
import type { JobState } from '../src/job/state';
import { toStatus } from '../src/job/status';
import { TelasticRestarts, TelasticRound, TelasticState, TelasticWorldSize } from '../src/temporal/search-attributes';

export function publish(state: JobState): void {
  const status = toStatus(state);
  if (state.spec.searchAttributes) {
    wf.upsertSearchAttributes([
      { key: TelasticState, value: state.phase },
      { key: TelasticWorldSize, value: state.phase === 'running' ? status.worldSize : 0 },
      { key: TelasticRound, value: state.round },
      { key: TelasticRestarts, value: state.restarts },
    ]);
  }
  const nodes = status.nodes.map((n) => `| ${n.nodeId} | ${n.groupRank ?? ''} | ${n.state} |`);
  wf.setCurrentDetails(
    [
      `**${state.phase}** · round ${state.round} · world size ${status.worldSize} · restarts ${state.restarts}/${state.spec.maxRestarts} · nodes ${state.spec.minNodes}:${state.spec.maxNodes}`,
      status.unusable ? `**${status.unusable.reason}** (fails after ${status.unusable.timeoutMs / 1000}s of this)` : '',
      state.lastFailure ? `last failure: ${describeFailure(state.lastFailure)}` : '',
      ...(status.unhealthy ?? []).map((u) => `health check of ${u.nodeId} failing: ${JSON.stringify(u.reason)}`),
      ...(status.quarantined ?? []).map((q) => `quarantined: ${q.nodeId}: ${q.reason}`),
      '',
      '| node | group rank | state |',
      '|---|---|---|',
      ...nodes,
    ].join('\n'),
  );
}
