/**
 * The error of a bad setting: a flag, an environment variable or a file named by one. Thrown
 * while settings are parsed (src/config/values.ts), by the CLI and by the layers below it
 * (the ledger host's TELASTIC_QUARANTINE_*, a key file); the CLI prints the one line and exits 2.
 */

/** Show a value inside a one-line message; quote it when it would otherwise be invisible. */
export function showValue(value: string): string {
  return value === '' || /\s/.test(value) ? JSON.stringify(value) : value;
}

/**
 * Bad input from the command line or the environment: an unknown option, a missing value, or a
 * value a flag (or its `PET_*` / `TEMPORAL_*` / `TELASTIC_*` environment variable) does not accept. The message is one line naming the flag
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
