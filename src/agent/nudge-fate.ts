/**
 * Whether an agent may act on the fate a nudge carries (workflows/nudge.ts) without asking the
 * job. Only the job's own execution can have scheduled it: an activity's workflow id and type are
 * set by the server, and while the job runs no other execution can hold its id, so whoever may
 * schedule activities on a node queue cannot forge a job's fate (they could cancel the job
 * anyway). Only a drop as lost, the mass event, and only by the run of the agent it is about: one
 * that prepared a round of the job (`preparedRound`), none after the drop's. A nudge outlives the
 * agent it was for: a container restarted in place polls the same node queue, and acting on its
 * predecessor's drop stopped the replacement's workers and cost the job a second restart (the
 * Kubernetes e2e). Anything else the agent asks the job about.
 */
import type { NodeFate } from '../job/fate';

export interface NudgeOrigin {
  workflowId?: string;
  workflowType?: string;
}

export function trustedFate(jobId: string, fate: NodeFate | undefined, from: NudgeOrigin, preparedRound: number | undefined): NodeFate | null {
  if (!fate || fate.node !== 'lost' || from.workflowId !== jobId || from.workflowType !== 'elasticJob') return null;
  return preparedRound !== undefined && preparedRound <= fate.round ? fate : null;
}
