/** Builders shared by the decision tests. */
import { jobSpecSchema, type JobSpecInput, type JoinRequest } from '../../src/job/spec';
import { initialState, type Failure, type JobState, type NodeRecord } from '../../src/job/state';

export function spec(over: Partial<JobSpecInput> = {}) {
  return jobSpecSchema.parse({
    jobId: 'job1',
    minNodes: 1,
    maxNodes: 4,
    nprocPerNode: 2,
    maxRestarts: 3,
    entrypoint: { script: 'train.py', args: ['--epochs', '3'] },
    rdzv: {},
    ...over,
  });
}

export function node(nodeId: string, slots = 2, joinedAt = 0): NodeRecord {
  return { nodeId, address: `${nodeId}.local`, slots, joinedAt };
}

export function state(over: Partial<JobState> = {}, specOver: Partial<JobSpecInput> = {}): JobState {
  return { ...initialState(spec(specOver), 0), ...over };
}

export function join(nodeId: string, over: Partial<JoinRequest> = {}): JoinRequest {
  return {
    nodeId,
    address: `${nodeId}.local`,
    slots: 2,
    entrypoint: { script: 'train.py', args: ['--epochs', '3'], module: false, noPython: false },
    role: 'default',
    ...over,
  };
}

export function workerFailure(nodeId: string, rank: number, exitCode = 1, round = 1): Failure {
  return { nodeId, rank, exitCode, signal: null, message: `worker ${rank} failed`, round };
}

export const ids = (ns: { nodeId: string }[]) => ns.map((n) => n.nodeId);

