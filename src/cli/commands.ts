/**
 * `telastic status / scale / drain / cancel / setup / controller`: thin commands over the client API.
 * Each waits out a Temporal server that is not up yet, restarting or overloaded (retry.ts): the
 * client commands for `--connect-timeout` seconds (TELASTIC_CONNECT_TIMEOUT, default 60), the
 * controller, a service, for ever.
 */
import { printableJson, printableLine } from '../printable';
import type { Connection } from '@temporalio/client';
import { Client } from '@temporalio/client';
import { Option, type Command } from 'commander';
import { cancelJob, drainNode, getJobStatus, scaleJob, type ClientOptions } from '../client/api';
import { describeProgress, jobProgress, type NodeProgress } from '../client/progress';
import { describeFailure } from '../job/decide';
import { DEFAULT_DRAIN_GRACE_MS, describePreemption } from '../job/preempt';
import type { JobStatus } from '../job/status';
import { getPoolStatus } from '../client/pool';
import type { PoolState } from '../pool/state';
import { startController } from '../controller';
import { defaultLedgerDir, ledgerToHost } from '../ledger/connect';
import { connect, connectNative, retrying, waitForNamespace, type Wait } from '../temporal/connect';
import { dataConverterFor, sealingFor } from '../temporal/data-converter';
import { RefusedPayloadError, SealedPayloadError } from '../temporal/sealing';
import { searchAttributesWarning, setupNamespace } from '../temporal/namespace-setup';
import { addConnectionOptions, apiKeyFlagWarning, compileConnectionOptions, flagOrEnv, type ConnectionFlagValues } from './connection-options';
import { UsageError } from './errors';
import { installRuntime } from './run';
import { registerLedgerCommands } from './ledger-commands';
import { addMetricsOptions, compileMetricsOptions, type MetricsFlagValues } from './metrics-options';
import { openMetrics } from '../metrics/endpoint';
import { watchControl } from '../metrics/control';
import { durationToMs, parseValue, secondsToMs } from '../config/values';

export const DEFAULT_CONNECT_TIMEOUT_S = 60;

type Retry = <T>(fn: () => Promise<T>) => Promise<T>;
/** `client`: the connection, namespace and DataConverter (sealed payloads) for the client API. */
type Action = (conn: Connection, client: ClientOptions & { namespace: string }, flags: Record<string, unknown>, args: string[], retry: Retry) => Promise<number>;

/** `--connect-timeout SECONDS` (TELASTIC_CONNECT_TIMEOUT): how long a command waits for Temporal. */
function connectWait(flags: { connectTimeout?: string }): Wait {
  const raw = flagOrEnv(flags.connectTimeout, '--connect-timeout', process.env, 'TELASTIC_CONNECT_TIMEOUT');
  const patienceMs = raw ? parseValue(secondsToMs('nonnegative'), raw) : DEFAULT_CONNECT_TIMEOUT_S * 1000;
  return { patienceMs, patienceName: '--connect-timeout' };
}

/** `check` sees the flags before any connection is made: bad input fails at once, with Temporal up or not. */
function withConnection(cmd: Command, action: Action, check?: (flags: Record<string, unknown>) => void): Command {
  const timeout = new Option('--connect-timeout <seconds>', `how long to wait for an unavailable Temporal server (env TELASTIC_CONNECT_TIMEOUT, default ${DEFAULT_CONNECT_TIMEOUT_S})`);
  return addConnectionOptions(cmd).addOption(timeout).action(async (...all: unknown[]) => {
    const command = all[all.length - 1] as Command;
    const flags = command.opts<ConnectionFlagValues & Record<string, unknown> & { connectTimeout?: string }>();
    check?.(flags);
    const co = compileConnectionOptions(flags, process.env);
    const wait = connectWait(flags);
    const dataConverter = await dataConverterFor(co);
    const conn = await connect(co, wait);
    try {
      process.exitCode = await action(conn, { connection: conn, namespace: co.namespace, dataConverter }, flags, command.args, retrying(conn, co, wait));
    } finally {
      await conn.close();
    }
  });
}

function intFlag(flags: Record<string, unknown>, name: string): number | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} ${String(raw)}: must be an integer >= 1`, `--${name}`, String(raw));
  return n;
}

export function printStatus(s: JobStatus, now = Date.now(), progress: ReadonlyMap<string, NodeProgress> = new Map()): string {
  const lines = [
    // A job that waits for nodes it may not use says so first (src/job/health.ts).
    ...(s.unusable ? [`job ${s.jobId}: ${s.unusable.reason}${unusableDeadline(s, now)}`] : []),
    `job ${s.jobId}: ${s.state}${s.verdict ? ` (${s.verdict})` : ''} · round ${s.round} · world size ${s.worldSize} · restarts ${s.restarts}/${s.maxRestarts} · nodes ${s.minNodes}:${s.maxNodes}`,
    ...s.nodes.map((n) => {
      const p = describeProgress(progress.get(n.nodeId));
      return `  ${n.nodeId.padEnd(24)} ${String(n.groupRank ?? '-').padStart(3)}  ${n.state.padEnd(10)} ${n.address ?? ''}${p ? `  ${p}` : ''}`;
    }),
  ];
  if (s.lastFailure) lines.push(`last failure: ${describeFailure(s.lastFailure)}`);
  if (s.checkpoint) lines.push(`checkpoint: ${s.checkpoint.path} (step ${s.checkpoint.step ?? '?'}, ${s.checkpoint.time})`);
  for (const p of s.preempting ?? []) lines.push(`drain of ${p.nodeId}: checkpoint-first requested ${p.requestedAt.slice(11, 19)}, waiting for a checkpoint (grace ${p.graceMs / 1000}s)`);
  for (const p of s.preemptions ?? []) lines.push(describePreemption(p));
  for (const u of s.unhealthy ?? []) lines.push(`unhealthy: ${u.nodeId}: health check failed: ${u.reason} (kept out until it passes)`);
  for (const q of s.quarantined ?? []) lines.push(`quarantined: ${q.nodeId}: ${q.reason} (telastic nodes --release ${q.nodeId})`);
  // Addresses and failure messages come from nodes and their workers: no escapes reach the terminal.
  return lines.map(printableLine).join('\n');
}

function unusableDeadline(s: JobStatus, now: number): string {
  const u = s.unusable;
  if (!u || ['succeeded', 'failed', 'cancelled'].includes(s.state)) return '';
  if (!u.since) return ` (the job fails after ${u.timeoutMs / 1000}s of this)`;
  const left = Math.max(0, Math.ceil((Date.parse(u.since) + u.timeoutMs - now) / 1000));
  return ` (the job fails in ${left}s unless one becomes usable)`;
}

export function printPool(p: PoolState): string {
  const label = (l: Record<string, string>) => Object.entries(l).map(([k, v]) => `${k}=${v}`).join(',');
  return [
    `pool ${p.name}: ${p.nodes.length} node(s), ${p.nodes.filter((n) => n.state === 'free').length} free · ${p.jobs.length} job(s)`,
    ...p.nodes.map((n) => `  ${n.nodeId.padEnd(24)} ${n.state.padEnd(9)} ${(n.jobId ?? '-').padEnd(24)} ${String(n.slots).padStart(3)} slot(s) ${n.address} ${label(n.labels)}`),
    ...p.jobs.map((j) => `  job ${j.jobId}: wants ${j.minNodes}:${j.maxNodes} × ${j.slots} slot(s), holds ${p.nodes.filter((n) => n.jobId === j.jobId).length}`),
  ].map(printableLine).join('\n');
}

export function registerCommands(program: Command): void {
  withConnection(program.command('status').argument('<job>').option('--json', 'print the status object as JSON').description('show a job'), async (conn, c, flags, [job], retry) => {
    // The server is waited for; a coordinator is not (the workflow's own status is shown instead).
    const desc = await retry(() => new Client(c).workflow.getHandle(job).describe());
    let status: JobStatus;
    try {
      status = await conn.withDeadline(Date.now() + 10_000, () => getJobStatus(c, job));
    } catch (err) {
      if (err instanceof SealedPayloadError || err instanceof RefusedPayloadError) throw err; // no key, the wrong one, a forged answer: not a missing coordinator
      console.log(flags.json ? JSON.stringify({ jobId: job, workflowStatus: desc.status.name }) : printableLine(`job ${job}: ${desc.status.name} (no coordinator answered: ${(err as Error).message})`));
      return 0;
    }
    // What the running nodes last reported (--progress-timeout, TELASTIC_PROGRESS_FILE); best effort.
    const progress = status.state === 'running' ? await jobProgress(new Client(c), job, desc).catch(() => new Map<string, NodeProgress>()) : new Map<string, NodeProgress>();
    const json = () => ({ ...status, nodes: status.nodes.map((n) => (progress.has(n.nodeId) ? { ...n, progress: progress.get(n.nodeId) } : n)) });
    console.log(flags.json ? printableJson(json()) : printStatus(status, Date.now(), progress));
    return 0;
  });
  withConnection(program.command('scale').argument('<job>').option('--min <n>').option('--max <n>').description('change min/max nodes (recorded even while no coordinator runs)'), async (_conn, c, flags, [job], retry) => {
    const req = { minNodes: intFlag(flags, 'min'), maxNodes: intFlag(flags, 'max') };
    if (req.minNodes === undefined && req.maxNodes === undefined) throw new UsageError('scale: give --min N and/or --max N', '--min', undefined);
    // Checked here too (in the coordinator's words), so that a queued scale cannot be one it will drop.
    if (req.minNodes !== undefined && req.maxNodes !== undefined && req.minNodes > req.maxNodes) throw new UsageError(`minNodes ${req.minNodes} exceeds maxNodes ${req.maxNodes}`, '--min', String(req.minNodes));
    const r = await retry(() => scaleJob(c, job, req));
    const asked = [req.minNodes && `--min ${req.minNodes}`, req.maxNodes && `--max ${req.maxNodes}`].filter(Boolean).join(' ');
    console.log(r === 'queued' ? `job ${job}: no coordinator answered; the scale to ${asked} is recorded and applies when a coordinator returns` : `job ${job}: nodes ${r.minNodes}:${r.maxNodes}`);
    return 0;
  });
  const drainCmd = program
    .command('drain')
    .argument('<job>')
    .argument('<node>')
    .option('--checkpoint-first', 'first ask every worker of the job to checkpoint (their agents\' --checkpoint-signal) and release the node once a newer checkpoint is complete')
    .option('--grace <duration>', 'with --checkpoint-first: release the node anyway after this long (default 60s)')
    .description('release a node at the next round boundary (recorded even while no coordinator runs)');
  const graceOf = (flags: Record<string, unknown>) => {
    if (flags.grace !== undefined && !flags.checkpointFirst) throw new UsageError('--grace: only with --checkpoint-first', '--grace', String(flags.grace));
    return flags.grace === undefined ? undefined : parseValue(durationToMs, { raw: String(flags.grace), from: '--grace' });
  };
  withConnection(drainCmd, async (_conn, c, flags, [job, node], retry) => {
    const graceMs = graceOf(flags);
    const opts = flags.checkpointFirst ? { checkpointFirst: true, graceMs: graceMs ?? DEFAULT_DRAIN_GRACE_MS } : {};
    const r = await retry(() => drainNode(c, job, node, undefined, opts));
    const how = flags.checkpointFirst ? ` after a checkpoint (grace ${(graceMs ?? DEFAULT_DRAIN_GRACE_MS) / 1000}s)` : '';
    console.log(r === 'applied' ? `job ${job}: draining ${node}${how}` : `job ${job}: no coordinator answered; the drain of ${node}${how} is recorded and applies when a coordinator returns`);
    return 0;
  }, (flags) => void graceOf(flags));
  withConnection(program.command('pool').argument('<name>').option('--json', 'print the pool state as JSON').description('show a pool: its nodes, their state and job, and its jobs in arrival order'), async (conn, c, flags, [name]) => {
    const p = await conn.withDeadline(Date.now() + 10_000, () => getPoolStatus(c, name));
    console.log(flags.json ? printableJson(p) : printPool(p));
    return 0;
  });
  withConnection(program.command('cancel').argument('<job>').description('cancel a job on every node'), async (_conn, c, _f, [job], retry) => {
    await retry(() => cancelJob(c, job));
    console.log(`job ${job}: cancel requested`);
    return 0;
  });
  withConnection(program.command('setup').description("prepare the namespace for telastic: register telastic's search attributes (operator API), check the namespace and its retention; idempotent"), async (conn, c, _f, _args, retry) => {
    await setupNamespace(conn, c.namespace, conn.options.address, retry, (line) => console.log(line));
    return 0;
  });
  registerLedgerCommands(program);
  addMetricsOptions(addConnectionOptions(program.command('controller').option('--task-queue <name>', 'control task queue', 'telastic').description('run a control-queue worker in the foreground (waits for ever for an unavailable Temporal server)')))
    .action(async (flags: ConnectionFlagValues & MetricsFlagValues & { taskQueue: string }) => {
      const co = compileConnectionOptions(flags, process.env);
      const metricsOptions = compileMetricsOptions(flags, process.env);
      const keyWarning = apiKeyFlagWarning(flags);
      if (keyWarning) console.error(`telastic controller: ${keyWarning}`);
      const sealing = await sealingFor(co);
      const endpoint = await openMetrics(metricsOptions, (line) => console.error(`telastic controller: ${line}`));
      installRuntime(endpoint?.sdkBindAddress);
      // A service: started before its server (systemd, compose) or across a server restart, it waits.
      const stopWaiting = new AbortController();
      const abort = () => stopWaiting.abort();
      process.once('SIGINT', abort);
      process.once('SIGTERM', abort);
      const wait: Wait = { patienceMs: Infinity, signal: stopWaiting.signal };
      let native;
      try {
        native = await connectNative(co, wait);
        await waitForNamespace(native, co, wait);
      } catch (err) {
        await endpoint?.close();
        if (!stopWaiting.signal.aborted) throw err;
        await native?.close();
        return; // stopped while waiting for the server: a clean stop
      } finally {
        process.off('SIGINT', abort);
        process.off('SIGTERM', abort);
      }
      // Once, at start: jobs run without the search attributes, but nobody would know why the UI cannot filter them.
      const saWarning = await searchAttributesWarning(native, co.namespace);
      if (saWarning) console.error(`telastic controller: ${saWarning}`);
      const ledger = await ledgerToHost(process.env, defaultLedgerDir(process.env), (line) => console.error(`telastic controller: ${line}`));
      const controller = await startController(native, co.namespace, flags.taskQueue, ledger, sealing.dataConverter);
      console.error(`telastic controller: serving ${flags.taskQueue} on ${co.address} (${co.namespace})${ledger ? `, with the ledger (${ledger.where})` : ''}`);
      // The sampler's own client connection: job and pool status for the job and pool series.
      const sampling = endpoint && { conn: await connect(co, { patienceMs: Infinity }) };
      const watch = endpoint && sampling && watchControl(endpoint, { native, connection: sampling.conn, namespace: co.namespace, dataConverter: sealing.dataConverter, workers: controller.workers });
      const stop = () => void controller.shutdown();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // A job sealed with a key this controller lacks would fail its tasks here for ever: stop.
      void sealing.unsealable.then((err) => {
        console.error(`telastic controller: ${err.message}`);
        process.exitCode = 1;
        stop();
      });
      await controller.done;
      await watch?.stop();
      await sampling?.conn.close();
      await endpoint?.close();
      await native.close();
    });
}
