/**
 * Typed message definitions of the job workflow, exported for clients and agents. Why each is a
 * signal or an update: an update answers (accepted, or refused with a reason) but needs a running
 * coordinator and Temporal allows 10 in flight per execution; a signal is stored by the server
 * even while no coordinator runs and costs the sender nothing, but cannot answer.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { LobbyEvent } from '../src/job/events';
import type { DrainRequest, ScaleRequest } from '../src/job/spec';
import type { JobStatus, NodeView } from '../src/job/status';

export type { LobbyEvent, NodeView };

/** Drain a node: it leaves at the round boundary and its `telastic run` exits 0. */
export const drainUpdate = defineUpdate<{ accepted: true }, [DrainRequest]>('drain');
/** The same drain as a signal: stored by the server even while no coordinator runs. */
export const drainSignal = defineSignal<[DrainRequest]>('drainNode');
export const scaleUpdate = defineUpdate<{ minNodes: number; maxNodes: number }, [ScaleRequest]>('scale');
/** The same scale as a signal, kept by the server while no coordinator runs; validated when applied. */
export const scaleSignal = defineSignal<[ScaleRequest]>('scaleJob');
export const statusQuery = defineQuery<JobStatus>('status');

/** What an agent learns about its own node: cheap to answer for any job size (see agentPollMs). */
export const nodeQuery = defineQuery<NodeView, [string]>('node');

/**
 * To a lobby: one node's join or leave. Joins are signals through lobbies, not updates to the
 * job: a thousand nodes joining at once would be a thousand updates (10 may be in flight), and
 * the job would take a signal per node.
 */
export const lobbySignal = defineSignal<[LobbyEvent]>('lobby');
/** To the job: a lobby's batch of joins and leaves, in arrival order. */
export const lobbyBatchSignal = defineSignal<[LobbyEvent[]]>('lobbyBatch');
/** To the job: nodes of a running group whose workers all exited 0 (sent once per group and round). */
export const groupFinishedSignal = defineSignal<[{ round: number; nodeIds: string[] }]>('groupFinished');
