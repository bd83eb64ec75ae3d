/**
 * `telastic history / report / nodes`: read what the ledger kept (connect.ts), with no Temporal
 * connection, so they work long after the job's workflow history is gone. A job the ledger does
 * not know, a node that is not quarantined, and a ledger that cannot be reached are one line and
 * exit 1; a bad flag value is one line and exit 2.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { connectLedger, NoLedgerError, type LedgerConnection } from '../ledger/connect';
import { JobNotInLedgerError, NodeNotQuarantinedError } from '../ledger/errors';
import { isRecorded, jobFigures, type RecordedJob } from '../ledger/figures';
import { figureLines, formatDuration, printable, stateLabel } from '../ledger/format';
import { historyText } from '../ledger/history-text';
import { nodeSummaries, releaseNode } from '../ledger/nodes';
import { nodesText } from '../ledger/nodes-text';
import { reportHtml } from '../ledger/report-html';
import { jobTimeline } from '../ledger/timeline';
import { durationToMs, parseValue } from '../config/values';

export interface LedgerCommandDeps {
  connect: (env: NodeJS.ProcessEnv) => Promise<LedgerConnection>;
  /** The end of a job or round still running, and the time of a release. */
  now: () => Date;
}

const DEFAULT_WINDOW = '24h';

type Flags = Record<string, unknown>;
type Action = (ledger: LedgerConnection, args: string[], flags: Flags) => Promise<void>;

export function registerLedgerCommands(program: Command, deps: LedgerCommandDeps = { connect: connectLedger, now: () => new Date() }): void {
  const withLedger = (action: Action) => async (...all: unknown[]) => {
    const command = all[all.length - 1] as Command;
    await using(deps, (ledger) => action(ledger, command.args, command.opts()));
  };

  program.command('history').argument('<job>').option('--json', 'print the timeline as JSON')
    .description('a job\'s timeline from the ledger: rounds, failures, checkpoints, node events')
    .action(withLedger(async (ledger, [jobId], flags) => {
      const t = await recordedJob(ledger, jobId!);
      console.log(flags.json ? JSON.stringify(t, null, 2) : historyText(t, deps.now()));
    }));

  program.command('report').argument('<job>').option('--html <file>', 'also write the report as one self-contained HTML page')
    .option('--json', 'print the figures as JSON')
    .description('a job\'s goodput, wall and productive time, restarts by cause and mean time to recover, from the ledger')
    .action(withLedger(async (ledger, [jobId], flags) => {
      const t = await recordedJob(ledger, jobId!);
      const now = deps.now();
      const f = jobFigures(t, now);
      if (typeof flags.html === 'string') writeFileSync(flags.html, reportHtml(t, f, { now, where: ledger.where }));
      if (flags.json) {
        console.log(JSON.stringify(f, null, 2));
        return;
      }
      const head = `job ${printable(t.job.jobId)} · ${printable(stateLabel(t))} · ${t.job.startedAt} → ${t.job.endedAt ?? 'now'}`;
      console.log([head, ...figureLines(f), ...(typeof flags.html === 'string' ? [`report written to ${flags.html}`] : [])].join('\n'));
    }));

  program.command('nodes').option('--json', 'print the nodes as JSON')
    .option('--window <duration>', 'what counts as recent (90s, 30m, 24h, 7d)', DEFAULT_WINDOW)
    .option('--release <node>', 'release a quarantined node (failures before the release stop counting)')
    .description('nodes that failed or were quarantined, across jobs: failures in all and within --window, the last one, quarantine')
    .action(async (flags: { json?: boolean; window: string; release?: string }) => {
      const windowMs = parseValue(durationToMs, { raw: flags.window, from: '--window' });
      await using(deps, async (ledger) => {
        if (flags.release !== undefined) {
          if (!(await releaseNode(ledger.pool, flags.release, deps.now()))) throw new NodeNotQuarantinedError(flags.release, ledger.where);
          console.log(`node ${printable(flags.release)}: released from quarantine`);
          return;
        }
        const nodes = await nodeSummaries(ledger.pool, windowMs, deps.now());
        console.log(flags.json ? JSON.stringify({ windowMs, nodes }, null, 2) : nodesText(nodes, windowLabel(flags.window, windowMs)));
      });
    });
}

async function recordedJob(ledger: LedgerConnection, jobId: string): Promise<RecordedJob> {
  const t = await jobTimeline(ledger.pool, jobId);
  if (!isRecorded(t)) throw new JobNotInLedgerError(jobId, ledger.where);
  return t;
}

/** Connects, runs `fn`, closes; a ledger that cannot be reached is one line saying so. */
async function using(deps: LedgerCommandDeps, fn: (ledger: LedgerConnection) => Promise<void>): Promise<void> {
  let ledger: LedgerConnection;
  try {
    ledger = await deps.connect(process.env);
  } catch (err) {
    if (err instanceof NoLedgerError) throw err;
    const e = err as Error & { code?: string };
    throw new Error(`ledger unreachable: ${e.message?.split('\n')[0] || e.code || e.name}`);
  }
  try {
    await fn(ledger);
  } finally {
    await ledger.close();
  }
}

/** `24h` as the user wrote it, when it is short; else the duration in our words. */
function windowLabel(raw: string, ms: number): string {
  return /^\s*\d+(ms|s|m|h|d)\s*$/.test(raw) ? raw.trim() : formatDuration(ms);
}
