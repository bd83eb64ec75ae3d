/**
 * Whether a process handles a signal, from Linux's /proc/PID/status (SigCgt: caught, SigIgn:
 * ignored; hex masks, bit n-1 for signal n). A signal such as SIGUSR1 kills a process that has no
 * handler for it, so a checkpoint request must skip a worker that did not install one: to a
 * script without a preemption handler the request then costs only the grace, not a failure.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

/** true / false from /proc; null where it cannot be told (no /proc, the process is gone). */
export function catchesSignal(pid: number, signal: NodeJS.Signals): boolean | null {
  const n = os.constants.signals[signal];
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const mask = (field: string) => BigInt(`0x${new RegExp(`^${field}:\\s*([0-9a-f]+)`, 'm').exec(status)?.[1] ?? '0'}`);
  const bit = 1n << BigInt(n - 1);
  return ((mask('SigCgt') | mask('SigIgn')) & bit) !== 0n;
}
