/**
 * torchrun's `--event-log-handler console`: the worker status events torch's agent records
 * (torch.distributed.elastic.events: `torchelastic.worker.status.<STATE>` with source WORKER),
 * one JSON line each, as `Event.serialize()` writes them (Python's json.dumps separators): START
 * for every worker of a round, then SUCCEEDED for all, or FAILED for the failed worker and
 * TERMINATED for the ones stopped because of it. A round stopped for a membership change records
 * none, as torch records none on a restart for one.
 */
import os from 'node:os';
import type { GroupResult } from './types';

/** What every event of a round carries (torch's WorkerSpec and WorkerGroup). */
export interface EventContext {
  runId: string;
  role: string;
  groupRank: number;
  groupWorldSize: number;
  /** torch's `spec.get_entrypoint_name()`: the command, e.g. python3. */
  entryPoint: string;
  /** Failure restarts so far (torch: max_restarts - remaining_restarts). */
  agentRestarts: number;
  worldSize: number;
}

/** Python's `json.dumps` with its default separators (", ", ": "), for byte-equal lines. */
export function pyJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`).join(', ')}}`;
  // JSON.stringify escapes as json.dumps does for ASCII; json.dumps also escapes non-ASCII.
  return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

interface WorkerInfo {
  localRank: number;
  rank: number;
  pid: number;
}

function event(state: string, ctx: EventContext, w: WorkerInfo, failure?: { exitCode: number; pid: number; rawError: string }): string {
  const md = {
    group_world_size: ctx.groupWorldSize,
    entry_point: ctx.entryPoint,
    local_rank: [w.localRank],
    role_rank: [w.rank],
    role_world_size: [ctx.worldSize],
    exit_code: [failure?.exitCode ?? null],
    worker_pid: [failure?.pid ?? null],
  };
  return pyJson({
    name: `torchelastic.worker.status.${state}`,
    source: 'WORKER',
    timestamp: 0,
    metadata: {
      run_id: ctx.runId,
      global_rank: w.rank,
      group_rank: ctx.groupRank,
      worker_id: String(w.pid),
      role: ctx.role,
      hostname: os.hostname(),
      state,
      total_run_time: 0,
      rdzv_backend: 'temporal',
      raw_error: failure?.rawError ?? null,
      metadata: pyJson(md),
      agent_restarts: ctx.agentRestarts,
      duration_ms: null,
    },
  });
}

/** START for each worker of a round just started. */
export function startEvents(ctx: EventContext, workers: WorkerInfo[]): string[] {
  return workers.map((w) => event('START', ctx, w));
}

/**
 * torch's `ProcessFailure.error_file_data`: the error file's JSON, else `{"message": "<NONE>"}`;
 * without a message and with an exit code (not a signal), torch adds its errorTraits.
 */
export function errorFileData(parsed: unknown, exitCode: number): unknown {
  const message = (parsed as { message?: unknown } | undefined)?.message;
  const data = (parsed ?? { message: '<NONE>' }) as Record<string, unknown>;
  if ((parsed === undefined || !message) && exitCode >= 0) return { ...data, errorTraits: { category: 'system_terminated_error', retryability: 'False' } };
  return data;
}

/**
 * The events of a round that ended, as torch's `_record_worker_events`. `errorFile` reads a
 * worker's error file (undefined without one). A signal is a negative exit code, as Python's
 * Popen reports it.
 */
export function endEvents(ctx: EventContext, workers: WorkerInfo[], result: GroupResult, errorFile: (localRank: number) => unknown): string[] {
  if (result.state === 'stopped') return [];
  if (result.state === 'succeeded') return workers.map((w) => event('SUCCEEDED', ctx, w));
  const f = result.failure;
  const exitCode = f.exitCode ?? -(os.constants.signals[f.signal as NodeJS.Signals] ?? 0);
  return workers.map((w) =>
    w.localRank === f.localRank ? event('FAILED', ctx, w, { exitCode, pid: f.pid, rawError: pyJson(errorFileData(errorFile(w.localRank), exitCode)) }) : event('TERMINATED', ctx, w),
  );
}
