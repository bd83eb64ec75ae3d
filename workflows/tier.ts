/**
 * The second tier of a round's fan-out. A round of more than `group_size` groups runs them in
 * tier workflows of at most `group_size` groups each (src/job/groups.ts, `tiersOf`), so no
 * execution starts more than `group_size` children in a phase, and children that close at once
 * buffer at most `group_size` completions (and as many signals) in one execution: under
 * Temporal's `history.maximumBufferedEventsBatch` (100) with the default 64, where 157 groups of
 * a 10,000-node job closing on the job itself would not be (docs/scale.md).
 */
import * as wf from '@temporalio/workflow';
import { ChildWorkflowCancellationType, ParentClosePolicy } from '@temporalio/workflow';
import { GROUP_TASK_TIMEOUT } from '../src/job/groups';
import type { NodeOutcome } from '../src/job/state';
import { prepareGroup, runGroup, type PrepareAnswer, type PrepareGroupInput, type RunGroupInput } from './group';
import { groupFinishedSignal } from './messages';

/** One group of a tier: its workflow id, its summary in the Web UI, and its input. */
export interface TierGroup<I> {
  workflowId: string;
  summary: string;
  input: I;
}

/**
 * Options of a group or tier child. TRY_CANCEL: the parent goes on at once when it stops a
 * round (the next `prepare` stops stale workers anyway); REQUEST_CANCEL: a parent that ends or
 * continues as new cancels its children rather than leaving them to run.
 */
export function childOptions(workflowId: string, summary: string) {
  return {
    workflowId,
    cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    workflowTaskTimeout: GROUP_TASK_TIMEOUT,
    staticSummary: summary,
  };
}

/** `prepare` through each group of the tier; the answers in group order. */
export async function prepareTier(groups: TierGroup<PrepareGroupInput>[]): Promise<PrepareAnswer[]> {
  const answers = await Promise.all(groups.map((g) => wf.executeChild(prepareGroup, { ...childOptions(g.workflowId, g.summary), args: [g.input] })));
  return answers.flat();
}

/**
 * `runWorkers` through each group of the tier. Returns when every group has returned, or at the
 * first outcome that is not a success (the other groups are cancelled: the job restarts the
 * round anyway). A group that failed or was cancelled counts its nodes stopped. The first
 * `groupFinished` of its groups is passed to the job at once (the round is ending: no joiner may
 * enter); the rest of the finished nodes reach it in the tier's result.
 */
export async function runTier(groups: TierGroup<RunGroupInput>[]): Promise<NodeOutcome[]> {
  const parent = wf.workflowInfo().parent;
  let told = false;
  wf.setHandler(groupFinishedSignal, (finished) => {
    if (told || !parent) return;
    told = true;
    void wf.getExternalWorkflowHandle(parent.workflowId).signal(groupFinishedSignal, finished).catch(() => undefined);
  });
  const outcomes: NodeOutcome[] = [];
  let returned = 0;
  const scope = new wf.CancellationScope();
  for (const g of groups) {
    void scope
      .run(() => wf.executeChild(runGroup, { ...childOptions(g.workflowId, g.summary), args: [g.input] }))
      .then(
        (results) => void outcomes.push(...results),
        () => void outcomes.push(...g.input.assignments.map((a): NodeOutcome => ({ nodeId: a.nodeId, kind: 'stopped' }))),
      )
      .finally(() => returned++);
  }
  const bad = () => outcomes.some((o) => o.kind !== 'succeeded');
  await wf.condition(() => returned === groups.length || bad());
  if (returned < groups.length) scope.cancel();
  return outcomes;
}
