import { trustedFate } from '../../src/agent/nudge-fate';
import type { NodeFate } from '../../src/job/fate';

const lost: NodeFate = { node: 'lost', round: 4 };
const fromJob = { workflowId: 'job-1', workflowType: 'elasticJob' };

describe('trustedFate', () => {
  it('takes a drop scheduled by the job execution itself, when this run of the agent prepared a round of the job and none after the drop', () => {
    expect(trustedFate('job-1', lost, fromJob, 4)).toEqual(lost);
    expect(trustedFate('job-1', lost, fromJob, 3)).toEqual(lost);
  });

  it('refuses a drop for an agent that prepared no round of the job: it may be about the agent before it (a container restarted in place)', () => {
    expect(trustedFate('job-1', lost, fromJob, undefined)).toBeNull();
  });

  it('leaves drains, leaves and refusals to a query of the job', () => {
    expect(trustedFate('job-1', { node: 'drained', round: 4 }, fromJob, 4)).toBeNull();
    expect(trustedFate('job-1', { node: 'left', round: 4 }, fromJob, 4)).toBeNull();
    expect(trustedFate('job-1', { node: 'rejected', reason: 'script does not match', round: 4 }, fromJob, undefined)).toBeNull();
  });

  it('refuses a fate from any other execution: another job, a workflow of another type, or none', () => {
    expect(trustedFate('job-1', lost, { workflowId: 'job-2', workflowType: 'elasticJob' }, 4)).toBeNull();
    expect(trustedFate('job-1', lost, { workflowId: 'job-1', workflowType: 'prepareGroup' }, 4)).toBeNull();
    expect(trustedFate('job-1', lost, {}, 4)).toBeNull();
  });

  it('refuses a stale fate: the node prepared a later round of the job since it was dropped', () => {
    expect(trustedFate('job-1', lost, fromJob, 5)).toBeNull();
  });

  it('has nothing to trust in a nudge without a fate (from an older job run)', () => {
    expect(trustedFate('job-1', undefined, fromJob, 4)).toBeNull();
  });
});
