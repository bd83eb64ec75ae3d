/**
 * Whether an agent may act on the fate a nudge carries (workflows/nudge.ts) without asking the
 * job. Only the job's own execution can have scheduled it: an activity's workflow id and type are
 * set by the server, and while the job runs no other execution can hold its id, so whoever may
 * schedule activities on a node queue cannot forge a job's fate (they could cancel the job
 * anyway). A fate older than a round this node prepared for the job since is stale (the node
 * came back meanwhile): the agent asks the job instead.
 */
import type { NodeFate } from '../job/fate';

export interface NudgeOrigin {
  workflowId?: string;
  workflowType?: string;
}

export function trustedFate(jobId: string, fate: NodeFate | undefined, from: NudgeOrigin, preparedRound: number | undefined): NodeFate | null {
  if (!fate || from.workflowId !== jobId || from.workflowType !== 'elasticJob') return null;
  if (preparedRound !== undefined && preparedRound > fate.round) return null;
  return fate;
}
