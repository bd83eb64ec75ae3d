/**
 * `telastic codec-server ARGS…` as a process of its own without the rest of the CLI: the codec
 * server of `telastic dev` (dev-codec.ts starts it), so that whatever a request costs it, the
 * controller and the ledger in dev's own process do not pay for it.
 */
import { Command } from 'commander';
import { registerCodecServerCommand } from './codec-server';

const program = new Command('telastic').exitOverride();
registerCodecServerCommand(program);
program.parseAsync(['codec-server', ...process.argv.slice(2)], { from: 'user' }).catch((err: unknown) => {
  console.error(`telastic codec-server: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  process.exit((err as { exitCode?: number }).exitCode ?? 1);
});
