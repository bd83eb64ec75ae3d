/**
 * Errors of the command line. Both are thrown while argv and the environment are parsed, before
 * anything touches Temporal or a process; the CLI entry point turns them into output and an exit
 * code.
 */

/** Show a value inside a one-line message; quote it when it would otherwise be invisible. */
export function showValue(value: string): string {
  return value === '' || /\s/.test(value) ? JSON.stringify(value) : value;
}

/**
 * Bad command-line input: an unknown option, a missing value, or a value a flag (or its `PET_*` /
 * `TEMPORAL_*` environment variable) does not accept. The message is one line naming the flag
 * and the value, e.g. `--nnodes 3:2: minimum (3) exceeds maximum (2)`; the CLI prints it and
 * exits 2.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';

  constructor(
    message: string,
    /** The flag, environment variable or argument at fault (`--nnodes`, `PET_NNODES`, `SCRIPT`). */
    readonly field: string,
    /** The value given, when there was one. */
    readonly value?: string,
  ) {
    super(message);
  }

  /** `${field} ${value}: ${problem}`: the usual shape for a value a flag does not accept. */
  static invalid(field: string, value: string, problem: string): UsageError {
    return new UsageError(`${field} ${showValue(value)}: ${problem}`, field, value);
  }
}

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
