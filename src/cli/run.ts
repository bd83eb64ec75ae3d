/** `telastic run`: torchrun's CLI in front of a node agent. */
import { printableLine } from '../printable';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jobMembership } from '../agent/job-membership';
import { runAgent } from '../agent/runtime';
import { parseStd } from '../agent/workers';
import { jobSpecSchema, parseOrThrow, type JobSpec } from '../job/spec';
import { checkSearchAttributes } from '../temporal/readiness';
import { startDevServer, type DevServer } from '../temporal/dev-server';
import { connect, connectNative, retrying, waitForNamespace, type Wait } from '../temporal/connect';
import { startCodecServer, type CodecServer } from '../temporal/codec-server';
import { sealingFor } from '../temporal/data-converter';
import { SealingCodec } from '../temporal/sealing';
import { openMetrics, type MetricsEndpoint } from '../metrics/endpoint';
import { HelpRequested, UsageError } from './errors';
import { parseRunArgs, type RunOptions } from './run-options';
import { numaNodes, planNumaBinding, type NumaPlan } from '../agent/workers/numa';

let runtimeInstalled = false;
/**
 * Before any worker exists; the agent handles SIGINT/SIGTERM itself (a graceful leave). The SDK
 * core logs at ERROR too: its WARN "poll retried N times" lines would flood stderr during a
 * server outage, which retry.ts reports in one line instead.
 */
/**
 * The SDK's logger, less its reports of a payload this process cannot unseal (a task it failed
 * to decode): the agent or controller stops on the first one and says so in one line.
 */
class QuietSealedLogger extends DefaultLogger {
  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (Object.values(meta ?? {}).some((v) => isSealedError(v))) return;
    super.log(level, message, meta);
  }
}

function isSealedError(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false;
  // The SDK wraps one that arrived in an activity's input as ApplicationFailure of that type.
  const e = err as { name?: unknown; type?: unknown };
  return e.name === 'SealedPayloadError' || e.type === 'SealedPayloadError' || isSealedError((err as { cause?: unknown }).cause, depth + 1);
}

/**
 * `sdkMetrics`: the loopback address the SDK's Prometheus exporter binds (src/metrics/endpoint.ts
 * appends its page to /metrics). Its names keep the SDK's `temporal_` prefix; counters end in
 * `_total` and durations are in seconds, as Prometheus's conventions have them.
 */
export function installRuntime(sdkMetrics?: string): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.TELASTIC_SDK_LOG_LEVEL as 'WARN' | undefined) ?? 'ERROR';
  Runtime.install({
    shutdownSignals: [],
    logger: new QuietSealedLogger(level),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: level, other: level }) },
      ...(sdkMetrics && { metrics: { metricPrefix: 'temporal_', prometheus: { bindAddress: sdkMetrics, countersTotalSuffix: true, useSecondsForDurations: true } } }),
    },
  });
}

function checkScript(o: RunOptions): void {
  const e = o.entrypoint;
  if (e.module || e.noPython) return;
  if (!existsSync(e.script)) throw new UsageError(`SCRIPT ${e.script}: no such file`, 'SCRIPT', e.script);
}

/** The job these options run, compiled here at the edge: what the agent is given has every default filled in. */
function jobSpecOf(o: RunOptions): JobSpec {
  return parseOrThrow(jobSpecSchema, {
    jobId: o.rdzvId,
    minNodes: o.minNodes,
    maxNodes: o.maxNodes,
    nprocPerNode: o.nprocPerNode,
    maxRestarts: o.maxRestarts,
    role: o.role,
    entrypoint: o.entrypoint,
    rdzv: o.rdzv,
    shutdownTimeoutMs: o.shutdownTimeoutMs,
    checkpointDir: o.checkpointDir ? path.resolve(o.checkpointDir) : undefined,
    keepCheckpoints: o.keepCheckpoints,
    maxRestartsWithoutProgress: o.maxRestartsWithoutProgress,
    progressTimeoutMs: o.progressTimeoutMs,
    progressStartTimeoutMs: o.progressStartTimeoutMs,
  }, 'job spec');
}

export async function runCommand(argv: string[]): Promise<number> {
  let o: RunOptions;
  let spec: JobSpec;
  try {
    o = parseRunArgs(argv, process.env);
    checkScript(o);
    spec = jobSpecOf(o);
    parseStd(o.redirects);
    parseStd(o.tee);
  } catch (err) {
    if (err instanceof HelpRequested) {
      console.log(err.text);
      return 0;
    }
    if (err instanceof UsageError || err instanceof Error) {
      console.error(`telastic run: ${printableLine(err.message)}`);
      return 2;
    }
    throw err;
  }
  for (const note of o.notes) console.error(`telastic run: note: ${note}`);
  let numa: NumaPlan | null = null;
  if (o.numaBinding !== undefined) {
    try {
      numa = planNumaBinding(o.numaBinding, o.nprocPerNode, process.env);
    } catch (err) {
      console.error(`telastic run: --numa-binding ${o.numaBinding}: ${firstLine(err)}`);
      return 2;
    }
    const nodes = numaNodes().length;
    if (numa === null) console.error(`telastic: --numa-binding ${o.numaBinding}: ${nodes === 1 ? 'this machine has one NUMA node, so ' : ''}binding changes nothing: workers run on every CPU the agent may use`);
    else console.error(`telastic: --numa-binding ${o.numaBinding}: local ranks bound (${numa.tool}) to CPUs ${numa.cpus.map((c, r) => `${r}:${c}`).join(' ')}`);
  }
  let endpoint: MetricsEndpoint | null;
  try {
    endpoint = await openMetrics(o.metrics, (line) => console.error(`telastic run: ${line}`));
  } catch (err) {
    console.error(`telastic run: ${firstLine(err)}`); // the port is taken: said before anything starts
    return 2;
  }
  installRuntime(endpoint?.sdkBindAddress);
  let server: DevServer | undefined;
  let codec: CodecServer | undefined;
  const abort = new AbortController();
  // SIGTERM is a preemption notice (Kubernetes, spot instances): the first asks the job for a
  // checkpoint before this node leaves, within --leave-grace; a second one, or SIGINT, leaves at
  // once. Without a checkpoint directory there is nothing to wait for: it leaves at once.
  // Each of --signals-to-handle (torchrun's default SIGTERM,SIGINT,SIGHUP,SIGQUIT) ends the agent
  // and stops its workers with that same signal, as torchrun's SignalException does; a signal not
  // listed keeps its default action (the agent dies of it, and the reaper kills the workers).
  const preempt = new AbortController();
  const checkpointFirst = o.leaveGraceMs > 0 && o.checkpointDir !== undefined;
  let received: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (sig === 'SIGTERM' && checkpointFirst && !preempt.signal.aborted) {
      received ??= sig;
      console.error(`telastic: SIGTERM: node ${o.nodeId} leaves job ${o.rdzvId} after a checkpoint (grace ${o.leaveGraceMs / 1000}s); SIGTERM again to leave at once`);
      return preempt.abort();
    }
    if (received === undefined || !abort.signal.aborted) console.error(`telastic: ${sig}: node ${o.nodeId} leaves job ${o.rdzvId}; its workers get ${received ?? sig}`);
    received ??= sig;
    abort.abort();
  };
  const handled = o.signalsToHandle as NodeJS.Signals[];
  for (const sig of handled) process.on(sig, onSignal);
  try {
    let connection = o.connection;
    const sealing = await sealingFor(connection);
    if (o.standalone) {
      // With a key, the Web UI decodes the job through a codec server of this process.
      if (sealing.keys.length > 0) codec = await startCodecServer({ codec: new SealingCodec(sealing.keys, { namespace: connection.namespace, acceptUnsealed: true }), port: 0 });
      server = await startDevServer({ port: 0, uiPort: 0, headless: false, uiCodecEndpoint: codec?.url });
      if (codec && server.uiUrl) for (const host of ['127.0.0.1', 'localhost']) codec.allowOrigin(`http://${host}:${new URL(server.uiUrl).port}`);
      connection = { ...connection, address: server.address };
      console.error(`telastic: standalone Temporal server at ${server.address}${server.uiUrl ? `, Web UI ${server.uiUrl}` : ''}`);
    }
    // Like torchrun's agents waiting for their store: a server not up yet is waited for, as long
    // as the job would wait for its nodes.
    const wait: Wait = { patienceMs: o.rdzv.joinTimeoutMs, patienceName: 'join_timeout (--rdzv-conf)', signal: abort.signal };
    // The worker connection first: it fails at once on a refused port and says so.
    const native = await connectNative(connection, wait);
    const conn = await connect(connection, wait);
    await waitForNamespace(conn, connection, wait); // before the agent's Worker.create checks it
    const retry = retrying(conn, connection, wait);
    const sa = await retry(() => checkSearchAttributes(conn, connection.namespace));
    const outcome = await runAgent(
      {
        nodeId: o.nodeId,
        localAddr: o.localAddr ?? (o.standalone ? '127.0.0.1' : os.hostname()),
        namespace: connection.namespace,
        taskQueue: o.taskQueue,
        coordinator: o.coordinator,
        output: {
          logDir: o.logDir,
          redirects: parseStd(o.redirects),
          tee: parseStd(o.tee),
          localRanksFilter: o.localRanksFilter,
          duplicateStdoutFilters: o.duplicateStdoutFilters,
          duplicateStderrFilters: o.duplicateStderrFilters,
        },
        stateDir: process.env.TELASTIC_STATE_DIR ?? path.join(os.homedir(), '.telastic', 'run'),
        connection: conn,
        nativeConnection: native,
        sealing,
        retry,
        checkpointSignal: o.checkpointSignal as NodeJS.Signals,
        ...(o.healthCheck ? { healthCheck: o.healthCheck } : {}),
        metrics: endpoint ?? undefined,
        stopSignal: () => received,
        eventLog: o.eventLogHandler === 'console' ? (line) => process.stderr.write(`${line}\n`) : undefined,
        workerOptions: { virtualLocalRank: o.virtualLocalRank, signalsToHandle: o.signalsToHandle, numa: numa ?? undefined },
      },
      jobMembership({ spec, searchAttributes: sa, uiUrl: server?.uiUrl ?? process.env.TELASTIC_UI_URL, leaveGraceMs: o.leaveGraceMs, preemptSignal: preempt.signal }),
      abort.signal,
    );
    console.error(`telastic: ${printableLine(outcome.summary)}`); // it quotes the failed worker
    await conn.close();
    await native.close();
    return outcome.code;
  } catch (err) {
    // Gave up waiting for Temporal, a missing namespace, a server that would not start: one line.
    if (abort.signal.aborted) return 143;
    console.error(`telastic run: ${firstLine(err)}`);
    return err instanceof UsageError ? 2 : 1; // a bad key file
  } finally {
    for (const sig of handled) process.off(sig, onSignal);
    await server?.stop();
    await codec?.close();
    await endpoint?.close();
  }
}

/** An error's first line, printable (it may quote a worker, a server or a submitter). */
function firstLine(err: unknown): string {
  return printableLine((err instanceof Error ? err.message : String(err)).split('\n')[0]);
}
