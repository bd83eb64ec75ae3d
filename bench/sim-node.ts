/**
 * A simulated node for the scale benchmark: a Temporal Worker on the node's own queue serving
 * the REAL node activities (activities/node.ts: prepare, runWorkers, findCheckpoint) with
 * stand-in worker groups instead of processes. A stand-in group "runs" until the benchmark says
 * the job is finished (then it succeeds) or the activity stops it (then it is stopped).
 *
 * Losing a node abruptly (`lose()`) is what a kill -9 looks like to Temporal: its heartbeats stop
 * (they are dropped at the activity context), its group never answers a stop, and its Worker
 * stops polling (shutdown is requested and never completes, since the activity never ends).
 */
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, NativeConnection, Next } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createNodeActivities } from '../activities/node';
import { nodeQueue } from '../activities/types';
import { createCheckpointActivities } from '../src/checkpoints';
import type { GroupResult, WorkerGroup } from '../src/agent/workers/types';
import type { RoundAssignment } from '../src/job/assignment';
import type { NodeFate } from '../src/job/fate';
import { NODE_POLLERS, TIMING } from '../src/temporal/workers';

export interface SimNodeOptions {
  connection: NativeConnection;
  namespace: string;
  nodeId: string;
  /** Concurrent activity long polls of the node's Worker. @default NODE_POLLERS, as a real agent */
  pollers?: number;
  /** The job nudged this node (its part changed: workflows/nudge.ts), with the fate it may act on, if any. */
  onNudge?(fate: NodeFate | null): void;
  onRunning(a: RoundAssignment): void;
  /** Every heartbeat the node sends, with the workflow id of the execution it goes to. */
  onHeartbeat(workflowId: string): void;
  /**
   * Drop the job's heartbeat interval from each assignment, so that runWorkers falls back to what
   * it did before groups (min(1 s, timeout / 4)): the "before" heartbeat figure.
   */
  oldHeartbeat?: boolean;
}

export interface SimNode {
  readonly nodeId: string;
  readonly worker: Worker;
  readonly running: Promise<void>;
  /** From now on every stand-in group (running or future) succeeds: the job's training is over. */
  finish(): void;
  /** Vanish abruptly: no more heartbeats, no answer to a stop, no more polls. */
  lose(): void;
  readonly lost: boolean;
  /**
   * Freeze for `ms`, as a SIGSTOP and SIGCONT would: no heartbeats, no answer to a stop, no nudge
   * handled meanwhile (its Worker keeps polling); then alive again.
   */
  pause(ms: number): void;
  /** NodeActivityHandle.idleMs: the agent's rule for asking the job. */
  idleMs(): number;
}

const silent = pino({ level: 'silent' });
const runRoot = mkdtempSync(path.join(os.tmpdir(), 'telastic-sim-'));

export async function createSimNode(o: SimNodeOptions): Promise<SimNode> {
  let finished = false;
  let lost = false;
  let frozenUntil = 0;
  const frozen = () => lost || Date.now() < frozenUntil;
  const thawed = () => new Promise<void>((r) => setTimeout(r, Math.max(0, frozenUntil - Date.now())));
  const ends = new Set<(r: GroupResult) => void>();

  const startGroup = (): WorkerGroup => {
    let end: (r: GroupResult) => void = () => undefined;
    const done = new Promise<GroupResult>((resolve) => (end = resolve));
    const settle = (r: GroupResult) => {
      ends.delete(settle);
      end(r);
    };
    if (finished) settle({ state: 'succeeded', exits: [] });
    else ends.add(settle);
    return {
      pids: [],
      wait: () => done,
      stop: async (reason?: string) => {
        if (lost) return new Promise<void>(() => undefined); // a dead node answers nothing
        if (frozen()) await thawed();
        settle({ state: 'stopped', reason: reason ?? null, exits: [] });
      },
    };
  };

  const node = createNodeActivities({
    nodeId: o.nodeId,
    entrypoint: { script: 'sim', args: [], module: false, noPython: false },
    bindAddress: '127.0.0.1',
    output: { redirects: 0, tee: 0 },
    shutdownTimeoutMs: 1000,
    baseEnv: {},
    runDir: path.join(runRoot, o.nodeId),
    log: silent,
    onWorkersStarted: (a) => o.onRunning(a),
    startGroup,
  });
  node.onNudge((_jobId, fate) => {
    if (frozen()) void thawed().then(() => !lost && o.onNudge?.(fate));
    else o.onNudge?.(fate);
  });
  const beatsOf = (ctx: Context) => {
    const real = ctx.heartbeat;
    const wf = ctx.info.workflowExecution?.workflowId ?? '';
    Object.defineProperty(ctx, 'heartbeat', {
      value: (details?: unknown) => {
        if (frozen()) return;
        o.onHeartbeat(wf);
        real(details);
      },
    });
    const execute = (input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) => {
      if (!o.oldHeartbeat || ctx.info.activityType !== 'runWorkers') return next(input);
      return next({ ...input, args: [{ ...(input.args[0] as RoundAssignment), heartbeatIntervalMs: 1000 }] }); // every 1 s, as before groups
    };
    return { inbound: { execute } };
  };
  const worker = await Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: nodeQueue(o.nodeId),
    identity: `${o.nodeId}@sim-${process.pid}`,
    activities: { ...node.activities, ...createCheckpointActivities({ log: silent }) },
    interceptors: { activity: [beatsOf] },
    maxHeartbeatThrottleInterval: TIMING.maxHeartbeatThrottleInterval,
    defaultHeartbeatThrottleInterval: TIMING.defaultHeartbeatThrottleInterval,
    shutdownGraceTime: '5s',
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: o.pollers ?? NODE_POLLERS },
  });
  const running = worker.run();
  return {
    nodeId: o.nodeId,
    worker,
    running,
    finish() {
      finished = true;
      for (const end of [...ends]) end({ state: 'succeeded', exits: [] });
    },
    lose() {
      lost = true;
      worker.shutdown();
    },
    get lost() {
      return lost;
    },
    pause(ms) {
      frozenUntil = Date.now() + ms;
    },
    idleMs: () => node.idleMs(),
  };
}
