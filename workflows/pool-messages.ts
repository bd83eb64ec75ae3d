/** Typed message definitions of the pool workflow (workflows/pool.ts), for agents, jobs and clients. */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { PoolNodeView } from '../src/pool/decide';
import type { DepartRequest, GrantedNode, JobRequest, PoolState, RegisterRequest } from '../src/pool/state';

/** An agent offers its node (signal-with-start: the first agent starts the pool). */
export const poolRegisterSignal = defineSignal<[RegisterRequest]>('register');
/** An agent leaves the pool for good (SIGTERM). */
export const poolDepartSignal = defineSignal<[DepartRequest]>('depart');
/** A job says what it wants, what it gives back, and when it ended. */
export const poolJobSignal = defineSignal<[JobRequest]>('jobRequest');
/** The whole pool: nodes, their states and owners, and the jobs in arrival order. */
export const poolStatusQuery = defineQuery<PoolState>('poolStatus');
/** One node, for its agent. */
export const poolNodeQuery = defineQuery<PoolNodeView, [string]>('poolNode');

/** To a job: nodes the pool granted it; they join as newcomers. */
export const poolGrantSignal = defineSignal<[{ pool: string; nodes: GrantedNode[] }]>('poolGrant');
