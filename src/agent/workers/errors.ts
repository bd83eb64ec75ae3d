/** Errors of the worker group. Each says when it is thrown; messages are one line. */

/** Thrown by `parseStd` when a `--redirects`/`--tee` value is not torchrun's form. */
export class StdSpecError extends Error {
  constructor(readonly value: string) {
    super(`invalid redirects/tee value '${value}': expected 0-3 (0=none 1=out 2=err 3=all) or a map like 0:1,1:2`);
    this.name = 'StdSpecError';
  }
}

/** Thrown by `createReaper` when the sidecar cannot be found or started. */
export class ReaperError extends Error {
  constructor(message: string, readonly cause?: unknown) {
    super(message);
    this.name = 'ReaperError';
  }
}
