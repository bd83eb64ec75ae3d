/** `telastic status / scale / drain / cancel / controller`: thin commands over the client API. */
import type { Connection } from '@temporalio/client';
import { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { cancelJob, drainNode, getJobStatus, scaleJob } from '../client/api';
import type { JobStatus } from '../job/status';
import { startController } from '../controller';
import { connect, connectNative } from '../temporal/connect';
import { addConnectionOptions, compileConnectionOptions, type ConnectionFlagValues } from './connection-options';
import { UsageError } from './errors';

type Action = (conn: Connection, namespace: string, flags: Record<string, unknown>, args: string[]) => Promise<number>;

function withConnection(cmd: Command, action: Action): Command {
  return addConnectionOptions(cmd).action(async (...all: unknown[]) => {
    const command = all[all.length - 1] as Command;
    const flags = command.opts<ConnectionFlagValues & Record<string, unknown>>();
    const co = compileConnectionOptions(flags, process.env);
    const conn = await connect(co);
    try {
      process.exitCode = await action(conn, co.namespace, flags, command.args);
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

export function printStatus(s: JobStatus): string {
  const lines = [
    `job ${s.jobId}: ${s.state} · round ${s.round} · world size ${s.worldSize} · restarts ${s.restarts}/${s.maxRestarts} · nodes ${s.minNodes}:${s.maxNodes}`,
    ...s.nodes.map((n) => `  ${n.nodeId.padEnd(24)} ${String(n.groupRank ?? '-').padStart(3)}  ${n.state.padEnd(10)} ${n.address ?? ''}`),
  ];
  if (s.lastFailure) lines.push(`last failure: node ${s.lastFailure.nodeId} rank ${s.lastFailure.rank ?? '-'} exit ${s.lastFailure.exitCode ?? '-'} signal ${s.lastFailure.signal ?? '-'} ${s.lastFailure.message ?? ''}`);
  if (s.checkpoint) lines.push(`checkpoint: ${s.checkpoint.path} (step ${s.checkpoint.step ?? '?'}, ${s.checkpoint.time})`);
  return lines.join('\n');
}

export function registerCommands(program: Command): void {
  withConnection(program.command('status').argument('<job>').option('--json', 'print the status object as JSON').description('show a job'), async (conn, ns, flags, [job]) => {
    let status: JobStatus;
    try {
      status = await conn.withDeadline(Date.now() + 10_000, () => getJobStatus({ connection: conn, namespace: ns }, job));
    } catch (err) {
      const desc = await new Client({ connection: conn, namespace: ns }).workflow.getHandle(job).describe();
      console.log(flags.json ? JSON.stringify({ jobId: job, workflowStatus: desc.status.name }) : `job ${job}: ${desc.status.name} (no coordinator answered: ${(err as Error).message})`);
      return 0;
    }
    console.log(flags.json ? JSON.stringify(status, null, 2) : printStatus(status));
    return 0;
  });
  withConnection(program.command('scale').argument('<job>').option('--min <n>').option('--max <n>').description('change min/max nodes'), async (conn, ns, flags, [job]) => {
    const req = { minNodes: intFlag(flags, 'min'), maxNodes: intFlag(flags, 'max') };
    if (req.minNodes === undefined && req.maxNodes === undefined) throw new UsageError('scale: give --min N and/or --max N', '--min', undefined);
    const r = await scaleJob({ connection: conn, namespace: ns }, job, req);
    console.log(`job ${job}: nodes ${r.minNodes}:${r.maxNodes}`);
    return 0;
  });
  withConnection(program.command('drain').argument('<job>').argument('<node>').description('release a node at the next round boundary'), async (conn, ns, _f, [job, node]) => {
    const r = await drainNode({ connection: conn, namespace: ns }, job, node);
    console.log(r === 'applied' ? `job ${job}: draining ${node}` : `job ${job}: no coordinator is running; the drain of ${node} is recorded and applies when one returns`);
    return 0;
  });
  withConnection(program.command('cancel').argument('<job>').description('cancel a job on every node'), async (conn, ns, _f, [job]) => {
    await cancelJob({ connection: conn, namespace: ns }, job);
    console.log(`job ${job}: cancel requested`);
    return 0;
  });
  addConnectionOptions(program.command('controller').option('--task-queue <name>', 'control task queue', 'telastic').description('run a control-queue worker in the foreground'))
    .action(async (flags: ConnectionFlagValues & { taskQueue: string }) => {
      const co = compileConnectionOptions(flags, process.env);
      const native = await connectNative(co);
      const controller = await startController(native, co.namespace, flags.taskQueue);
      console.error(`telastic controller: serving ${flags.taskQueue} on ${co.address} (${co.namespace})`);
      const stop = () => void controller.shutdown();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await controller.done;
      await native.close();
    });
}
