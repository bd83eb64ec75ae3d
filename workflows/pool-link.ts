/**
 * A pool job's side of its pool (workflows/pool.ts): it tells the pool what it wants (its min
 * and max nodes) and gives back the nodes it no longer holds, in one signal per change; the pool
 * grants nodes back as `poolGrant` signals, which join the job like nodes of `telastic run`
 * (src/job/pool-link.ts has the decisions).
 */
import * as wf from '@temporalio/workflow';
import { poolWorkflowId, type JobRequest } from '../src/pool/state';
import type { JobState } from '../src/job/state';
import { releases } from '../src/job/pool-link';
import { poolJobSignal } from './pool-messages';
import type { JobRun } from './job-run';

/** How long a job waits before asking a pool that does not exist yet (no agent registered) again. */
const RETRY_MS = 2000;

function request(s: JobState, release: JobRequest['release'], done: boolean): JobRequest {
  return { jobId: s.spec.jobId, minNodes: s.spec.minNodes, maxNodes: s.spec.maxNodes, slots: s.spec.nprocPerNode, release, done };
}

/** Keep the pool informed for the life of this run; returns once the run ended. */
export async function linkToPool(pool: string, run: JobRun): Promise<void> {
  const handle = wf.getExternalWorkflowHandle(poolWorkflowId(pool));
  const wants = () => `${run.state.spec.minNodes}:${run.state.spec.maxNodes}`;
  let told = '';
  while (!run.ended) {
    await wf.condition(() => run.ended || wants() !== told || releases(run.state).length > 0);
    if (run.ended) return;
    const want = wants();
    const release = releases(run.state);
    try {
      await handle.signal(poolJobSignal, request(run.state, release, false));
      told = want;
      run.apply({ type: 'poolTold', released: release.map((r) => r.nodeId) });
    } catch (err) {
      wf.log.warn(`pool ${pool} did not take the request; asking again in ${RETRY_MS / 1000}s`, { error: String(err) });
      await wf.condition(() => run.ended, RETRY_MS, { summary: `retry: ask pool ${pool} again` });
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
