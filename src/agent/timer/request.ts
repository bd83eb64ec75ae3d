/** One line read from the timer FIFO → a request, or why it was not one. Pure. */
import { z } from 'zod';
import type { TimerRequest } from './types';

/**
 * torch's FileTimerRequest.to_json. `version` is checked to be a number and otherwise not
 * looked at, as torch's server does (it has only ever been 1). Linux signals end at 64.
 */
const Wire = z
  .object({
    version: z.number().int().positive(),
    pid: z.number().int().positive(),
    scope_id: z.string().max(4096),
    expiration_time: z.number().finite(),
    signal: z.number().int().max(64),
  })
  .strict();

export type Parsed = { ok: true; request: TimerRequest } | { ok: false; reason: string };

export function parseRequest(line: string): Parsed {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const r = Wire.safeParse(data);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    return { ok: false, reason: `${issue.path.join('.') || 'request'}: ${issue.message}` };
  }
  const { version, pid, scope_id: scopeId, expiration_time: expirationTime, signal } = r.data;
  return { ok: true, request: { version, pid, scopeId, expirationTime, signal } };
}
