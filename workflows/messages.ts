/** Typed message definitions of the job workflow, exported for clients and agents. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DrainRequest, JoinRequest, LeaveRequest, ScaleRequest } from '../src/job/spec';
import type { JobStatus } from '../src/job/status';

/** A node offers itself (address and slots). Rejected when its launch does not match the job. */
export const joinUpdate = defineUpdate<{ accepted: true; state: string }, [JoinRequest]>('join');
/** A node leaves for good (its agent was stopped); a membership change, not a failure. */
export const leaveSignal = defineSignal<[LeaveRequest]>('leave');
/** Drain a node: it leaves at the round boundary and its `telastic run` exits 0. */
export const drainUpdate = defineUpdate<{ accepted: true }, [DrainRequest]>('drain');
/** The same drain as a signal: stored by the server even while no coordinator runs. */
export const drainSignal = defineSignal<[DrainRequest]>('drainNode');
export const scaleUpdate = defineUpdate<{ minNodes: number; maxNodes: number }, [ScaleRequest]>('scale');
/** The same scale as a signal, kept by the server while no coordinator runs; validated when applied. */
export const scaleSignal = defineSignal<[ScaleRequest]>('scaleJob');
export const cancelSignal = defineSignal('cancel');
export const statusQuery = defineQuery<JobStatus>('status');
