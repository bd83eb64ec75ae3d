import { trustedFate } from '../../src/agent/nudge-fate';
import type { NodeFate } from '../../src/job/fate';

const lost: NodeFate = { node: 'lost', round: 4 };
const fromJob = { workflowId: 'job-1', workflowType: 'elasticJob' };

describe('trustedFate', () => {
  it('takes a fate scheduled by the job execution itself, when the node prepared no later round', () => {
    expect(trustedFate('job-1', lost, fromJob, undefined)).toEqual(lost);
    expect(trustedFate('job-1', lost, fromJob, 4)).toEqual(lost);
    expect(trustedFate('job-1', lost, fromJob, 3)).toEqual(lost);
  });

  it('refuses a fate from any other execution: another job, a workflow of another type, or none', () => {
    expect(trustedFate('job-1', lost, { workflowId: 'job-2', workflowType: 'elasticJob' }, undefined)).toBeNull();
    expect(trustedFate('job-1', lost, { workflowId: 'job-1', workflowType: 'prepareGroup' }, undefined)).toBeNull();
    expect(trustedFate('job-1', lost, {}, undefined)).toBeNull();
  });

  it('refuses a stale fate: the node prepared a later round of the job since it was dropped', () => {
    expect(trustedFate('job-1', lost, fromJob, 5)).toBeNull();
  });

  it('has nothing to trust in a nudge without a fate (from an older job run)', () => {
    expect(trustedFate('job-1', undefined, fromJob, undefined)).toBeNull();
  });
});
