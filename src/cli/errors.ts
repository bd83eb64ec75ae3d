/**
 * Errors of the command line, thrown while argv and the environment are parsed, before anything
 * touches Temporal or a process; the CLI entry point turns them into output and an exit code.
 * `UsageError` lives in src/config/errors.ts (the layers below the CLI throw it for a bad
 * environment variable or key file too) and is re-exported here for the commands.
 */

export { UsageError, showValue } from '../config/errors';

/**
 * `-h`/`--help` was given among telastic's own options (not among the script's). Carries the
 * help text; the CLI prints it to stdout and exits 0.
 */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';

  constructor(readonly text: string) {
    super('help requested');
  }
}
