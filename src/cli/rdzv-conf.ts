/**
 * `--rdzv-conf key=value,…`, split as torchrun's `_parse_rendezvous_config` splits it (blanks
 * around keys and values are dropped, every entry needs a key and a value), then compiled to
 * telastic's rendezvous timing. Keys telastic does not use (torchrun's `close_timeout`,
 * `read_timeout`, backend-specific ones) are accepted and ignored, with a note.
 */
import { DEFAULT_GROUP_SIZE } from '../job/groups';
import { DEFAULT_UNUSABLE_TIMEOUT_MS } from '../job/health';
import type { RdzvTiming } from '../job/spec';
import { UsageError } from './errors';
import { secondsToMs, type RawValue } from '../config/values';

const KNOWN = {
  join_timeout: { field: 'joinTimeoutMs', bound: 'positive', defaultMs: 600_000 },
  last_call_timeout: { field: 'lastCallTimeoutMs', bound: 'nonnegative', defaultMs: 30_000 },
  heartbeat_timeout: { field: 'heartbeatTimeoutMs', bound: 'positive', defaultMs: 10_000 },
  prepare_timeout: { field: 'prepareTimeoutMs', bound: 'positive', defaultMs: 5_000 },
  unusable_timeout: { field: 'unusableTimeoutMs', bound: 'positive', defaultMs: DEFAULT_UNUSABLE_TIMEOUT_MS },
} as const satisfies Record<string, { field: Exclude<keyof RdzvTiming, 'groupSize'>; bound: 'positive' | 'nonnegative'; defaultMs: number }>;

/** The defaults, in seconds as `--rdzv-conf` takes them: 600, 30, 10 and 5; group_size 64 (unusable_timeout: 60, src/job/health.ts). */
export const RDZV_CONF_DEFAULTS_MS: RdzvTiming = {
  joinTimeoutMs: KNOWN.join_timeout.defaultMs,
  lastCallTimeoutMs: KNOWN.last_call_timeout.defaultMs,
  heartbeatTimeoutMs: KNOWN.heartbeat_timeout.defaultMs,
  prepareTimeoutMs: KNOWN.prepare_timeout.defaultMs,
  groupSize: DEFAULT_GROUP_SIZE,
};

/** Split `key=value,…` into pairs; a malformed entry is a UsageError naming that entry. */
export function splitRdzvConf(value: RawValue): Array<[key: string, value: string, entry: string]> {
  if (value.raw.trim() === '') return [];
  return value.raw.split(',').map((entry) => {
    const eq = entry.indexOf('=');
    const key = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    const val = eq < 0 ? '' : entry.slice(eq + 1).trim();
    if (!key) throw UsageError.invalid(value.from, entry, 'expected KEY=VALUE,KEY=VALUE,…');
    if (!val) throw UsageError.invalid(value.from, entry, `${key} needs a value`);
    return [key, val, entry.trim()];
  });
}

/** Compile `--rdzv-conf` to timing in milliseconds; notes list the keys that were ignored. */
export function compileRdzvConf(value: RawValue | undefined): { rdzv: RdzvTiming; notes: string[] } {
  const rdzv = { ...RDZV_CONF_DEFAULTS_MS };
  const notes: string[] = [];
  for (const [key, raw, entry] of value ? splitRdzvConf(value) : []) {
    if (key === 'group_size') {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1 || n > 1000) throw UsageError.invalid(value!.from, entry, 'group_size must be an integer from 1 to 1000');
      rdzv.groupSize = n;
      continue;
    }
    const known = Object.hasOwn(KNOWN, key) ? KNOWN[key as keyof typeof KNOWN] : undefined;
    if (!known) {
      notes.push(`${value!.from} ${entry}: not used by telastic; ignored`);
      continue;
    }
    const r = secondsToMs(known.bound).safeParse(raw);
    if (!r.success) {
      throw UsageError.invalid(value!.from, entry, r.error.issues[0]?.message ?? 'invalid value');
    }
    rdzv[known.field] = r.data;
  }
  return { rdzv, notes };
}
