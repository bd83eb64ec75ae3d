/** Typed message definitions of the job workflow, exported for clients and agents. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DrainRequest, JoinRequest, LeaveRequest, ScaleRequest } from '../src/job/spec';
import type { JobStatus, NodeState } from '../src/job/status';

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

/** What an agent learns about its own node: cheap to answer for any job size (see agentPollMs). */
export interface NodeView {
  job: JobStatus['state'];
  /** The node's state in the job; 'pending' until its join arrived, 'rejected' with a reason. */
  node: NodeState | 'pending' | 'rejected';
  reason?: string;
}
export const nodeQuery = defineQuery<NodeView, [string]>('node');

/** A join or leave entering a job through one of its lobbies (see workflows/lobby.ts). */
export type LobbyEvent = { kind: 'join'; req: JoinRequest } | { kind: 'leave'; req: LeaveRequest };
/** To a lobby: one node's join or leave. */
export const lobbySignal = defineSignal<[LobbyEvent]>('lobby');
/** To the job: a lobby's batch of joins and leaves, in arrival order. */
export const lobbyBatchSignal = defineSignal<[LobbyEvent[]]>('lobbyBatch');
/** To the job: nodes of a running group whose workers all exited 0 (sent once per group and round). */
export const groupFinishedSignal = defineSignal<[{ round: number; nodeIds: string[] }]>('groupFinished');
