/**
 * What a worker process's codec hands its workflows and activities in place of a payload it
 * refused (unsealed, sealed for another namespace, tampered with: see sealing.ts): a value no
 * schema accepts, carrying the codec's one line. A worker's codec cannot throw instead: a payload
 * that fails to decode fails the whole workflow task, and Temporal retries it for ever, so one
 * forged signal would wedge the job. Handlers that parse their input refuse the stand-in with its
 * line (workflows/job-handlers.ts `checked`); signals that do not parse change nothing.
 *
 * Pure module: workflow code imports it.
 */
export const REFUSED_KEY = 'telasticRefusedPayload';

export interface RefusedPayload {
  [REFUSED_KEY]: string;
}

export function refusedPayload(reason: string): RefusedPayload {
  return { [REFUSED_KEY]: reason };
}

/** The codec's line when `value` is a stand-in for a refused payload, else null. */
export function refusalOf(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const reason = (value as Record<string, unknown>)[REFUSED_KEY];
  return typeof reason === 'string' ? reason : null;
}
