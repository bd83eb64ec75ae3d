/** The `telastic` command line. `run` takes torchrun's flags, so it is parsed on its own. */
import { printableLine } from '../printable';
import { Command } from 'commander';
import { installRuntime, runCommand } from './run';
import { registerCommands } from './commands';
import { agentCommand, submitCommand } from './pool-commands';
import { registerDevCommand } from './dev';
import { registerCodecServerCommand } from './codec-server';
import { registerOperatorCommand } from './operator-command';
import { UsageError } from './errors';
import { startController } from '../controller';
import { ledgerToHost } from '../ledger/connect';
import path from 'node:path';
import { connect, connectNative } from '../temporal/connect';
import { watchControl } from '../metrics/control';

/** Commands that parse their own argv (SCRIPT ARGS… pass through untouched). */
const OWN_ARGV: Record<string, (argv: string[]) => Promise<number>> = { run: runCommand, submit: submitCommand, agent: agentCommand };

export async function main(argv: string[]): Promise<void> {
  const own = OWN_ARGV[argv[0] ?? ''];
  if (own) {
    const code = await own(argv.slice(1)).catch((err: unknown) => {
      console.error(`telastic ${argv[0]}: ${oneLine(err)}`);
      return 1;
    });
    // A client long poll (the job result) may still be open; once stdout and stderr are
    // flushed, the node's part is over.
    await new Promise((r) => process.stdout.write('', r));
    await new Promise((r) => process.stderr.write('', r));
    process.exit(code);
  }
  const program = new Command('telastic')
    .description('elastic distributed training coordinated by a durable Temporal workflow')
    .showHelpAfterError(false)
    .exitOverride();
  program.command('run').description('launch this node\'s workers for a job: torchrun\'s flags (telastic run --help)');
  program.command('submit').description('submit a job to a pool of agents: run\'s job flags, --pool NAME (telastic submit --help)');
  program.command('agent').description('serve a pool: a long-lived node daemon (telastic agent --help)');
  registerCommands(program);
  registerCodecServerCommand(program);
  registerOperatorCommand(program);
  registerDevCommand(program, {
    startController: async (address, namespace, dbFile, dataConverter, metrics) => {
      installRuntime(metrics?.sdkBindAddress);
      const native = await connectNative({ address, namespace });
      // The embedded ledger lives beside dev's database (.telastic/ledger by default).
      const dir = process.env.TELASTIC_LEDGER_DIR ?? path.join(path.dirname(dbFile), 'ledger');
      const ledger = await ledgerToHost(process.env, dir, (line) => console.error(`telastic dev: ${line}`));
      if (ledger) {
        const shown = ledger.where === 'DATABASE_URL' ? ledger.where : path.relative(process.cwd(), dir) || '.';
        const read = ['DATABASE_URL', '.telastic/ledger'].includes(shown) ? 'telastic history JOB' : `TELASTIC_LEDGER_DIR=${shown} telastic history JOB`;
        console.log(`Ledger: ${shown} (read it with: ${read})`);
      }
      const c = await startController(native, namespace, 'telastic', ledger, dataConverter);
      const sampling = metrics && (await connect({ address, namespace }));
      const watch = metrics && sampling && watchControl(metrics, { native, connection: sampling, namespace, dataConverter, workers: c.workers });
      return { shutdown: async () => { await watch?.stop(); await sampling?.close(); await c.shutdown(); await native.close(); } };
    },
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'commander.helpDisplayed' || code === 'commander.version') return;
    if (code?.startsWith('commander.')) {
      process.exitCode = 2;
      return;
    }
    if (err instanceof UsageError) {
      console.error(`telastic: ${printableLine(err.message)}`);
      process.exitCode = 2;
      return;
    }
    console.error(`telastic: ${oneLine(err)}`);
    process.exitCode = (err as { name?: string }).name === 'JobInputError' ? 2 : 1;
  }
}

/**
 * The first line of an error's message: what the user sees instead of a stack trace, printable
 * (a message may quote a worker, a server or a submitter).
 */
export function oneLine(err: unknown): string {
  if ((err as { name?: string }).name === 'WorkflowNotFoundError') return printableLine(`job ${(err as { workflowId?: string }).workflowId} not found`);
  const message = err instanceof Error ? err.message : String(err);
  return printableLine(message.split('\n')[0] || String((err as Error | undefined)?.name ?? 'unknown error'));
}
