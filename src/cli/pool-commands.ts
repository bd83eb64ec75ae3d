/**
 * `telastic agent` (a pool's long-lived node daemon) and `telastic submit` (a job for a pool).
 * Both parse their own argv, like `run`: submit takes run's job flags and SCRIPT ARGS….
 */
import { printableLine } from '../printable';
import os from 'node:os';
import path from 'node:path';
import { checkLaunch, compilePolicy } from '../agent/allow';
import { outcomeOfFailure } from '../agent/outcome';
import { poolMembership } from '../agent/pool-membership';
import { runAgent } from '../agent/runtime';
import { JobInputError } from '../client/api';
import { submitJob } from '../client/pool';
import { connect, connectNative, retrying, waitForNamespace, type Wait } from '../temporal/connect';
import { dataConverterFor, sealingFor } from '../temporal/data-converter';
import { checkSearchAttributes } from '../temporal/readiness';
import { parseAgentArgs, type AgentCliOptions } from './agent-options';
import { DEFAULT_CONNECT_TIMEOUT_S } from './commands';
import { HelpRequested, UsageError } from './errors';
import { installRuntime } from './run';
import { openMetrics } from '../metrics/endpoint';
import { parseSubmitArgs, type SubmitOptions } from './submit-options';

/** Parse argv; help prints and gives 0, bad input prints one line and gives 2. */
function parsed<T>(what: string, parse: () => T): T | number {
  try {
    return parse();
  } catch (err) {
    if (err instanceof HelpRequested) {
      console.log(err.text);
      return 0;
    }
    console.error(`telastic ${what}: ${printableLine((err as Error).message)}`);
    return 2;
  }
}

/** An error's first line, printable (it may quote a worker, a server or a submitter). */
function firstLine(err: unknown): string {
  return printableLine((err instanceof Error ? err.message : String(err)).split('\n')[0]);
}

export async function submitCommand(argv: string[]): Promise<number> {
  const o = parsed<SubmitOptions>('submit', () => parseSubmitArgs(argv, process.env));
  if (typeof o === 'number') return o;
  for (const note of o.notes) console.error(`telastic submit: note: ${note}`);
  const raw = process.env.TELASTIC_CONNECT_TIMEOUT;
  const wait: Wait = { patienceMs: raw ? Number(raw) * 1000 : DEFAULT_CONNECT_TIMEOUT_S * 1000, patienceName: 'TELASTIC_CONNECT_TIMEOUT' };
  const jobId = o.spec.jobId;
  let conn;
  try {
    conn = await connect(o.connection, wait);
    const retry = retrying(conn, o.connection, wait);
    const sa = await retry(() => checkSearchAttributes(conn!, o.connection.namespace));
    const opts = { connection: conn, namespace: o.connection.namespace, taskQueue: o.taskQueue, dataConverter: await dataConverterFor(o.connection) };
    const handle = await retry(() => submitJob(opts, { ...o.spec, searchAttributes: sa }));
    console.log(jobId);
    if (!o.wait) return 0;
    console.error(`telastic submit: following job ${jobId} on pool ${o.spec.pool} (Ctrl-C stops following, not the job)`);
    return await retry(() => handle.result()).then(
      (r) => {
        console.error(`telastic: job ${jobId} succeeded: ${r.rounds} round(s), ${r.restarts} restart(s)`);
        return 0;
      },
      (err: unknown) => {
        const outcome = outcomeOfFailure(jobId, err);
        console.error(`telastic: ${printableLine(outcome.summary)}`);
        return outcome.code;
      },
    );
  } catch (err) {
    console.error(`telastic submit: ${firstLine(err)}`);
    return err instanceof JobInputError || err instanceof UsageError ? 2 : 1;
  } finally {
    await conn?.close();
  }
}

export async function agentCommand(argv: string[]): Promise<number> {
  const o = parsed<AgentCliOptions>('agent', () => parseAgentArgs(argv, process.env));
  if (typeof o === 'number') return o;
  let policy;
  try {
    policy = await compilePolicy({ allow: o.allow, allowFiles: o.allowFiles, allowEnv: o.allowEnv, passEnv: o.passEnv });
  } catch (err) {
    console.error(`telastic agent: --allow: ${firstLine(err)}`);
    return 2;
  }
  for (const w of o.warnings) console.error(`telastic agent: ${w}`);
  if (policy.allow.length === 0 && policy.allowFiles.length === 0) console.error('telastic agent: started without --allow: every submitted script will be refused');
  let endpoint;
  try {
    endpoint = await openMetrics(o.metrics, (line) => console.error(`telastic agent: ${line}`));
  } catch (err) {
    console.error(`telastic agent: ${firstLine(err)}`);
    return 2;
  }
  installRuntime(endpoint?.sdkBindAddress);
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A service (systemd, a DaemonSet): it waits for its server as long as it takes.
  const wait: Wait = { patienceMs: Infinity, signal: abort.signal };
  try {
    const sealing = await sealingFor(o.connection);
    const native = await connectNative(o.connection, wait);
    const conn = await connect(o.connection, wait);
    await waitForNamespace(conn, o.connection, wait);
    const outcome = await runAgent(
      {
        nodeId: o.nodeId,
        localAddr: o.localAddr ?? os.hostname(),
        namespace: o.connection.namespace,
        taskQueue: o.taskQueue,
        coordinator: o.coordinator,
        checkpointSignal: o.checkpointSignal,
        ...(o.healthCheck ? { healthCheck: o.healthCheck } : {}),
        output: { redirects: 0, tee: 0 },
        stateDir: process.env.TELASTIC_STATE_DIR ?? path.join(os.homedir(), '.telastic', 'agent'),
        connection: conn,
        nativeConnection: native,
        sealing,
        retry: retrying(conn, o.connection, wait),
        metrics: endpoint ?? undefined,
      },
      poolMembership({
        pool: o.pool,
        slots: o.nproc,
        labels: o.labels,
        checkLaunch: (launch) => checkLaunch(policy, launch, o.nodeId),
        policy,
        heartbeatTimeoutMs: o.heartbeatTimeoutMs,
        shutdownTimeoutMs: o.shutdownTimeoutMs,
      }),
      abort.signal,
    );
    console.error(`telastic agent: ${printableLine(outcome.summary)}`); // it quotes the failed worker
    await conn.close();
    await native.close();
    return outcome.code;
  } catch (err) {
    if (abort.signal.aborted) return 0; // stopped while waiting for the server
    console.error(`telastic agent: ${firstLine(err)}`);
    return err instanceof UsageError ? 2 : 1; // a bad key file
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await endpoint?.close();
  }
}
