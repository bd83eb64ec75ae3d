/**
 * Parsers for the raw strings that flags and environment variables carry, as zod schemas whose
 * messages complete the sentence `${flag} ${value}: …`. Number forms follow Python's `int()` and
 * `float()` as torchrun's argparse applies them (surrounding blanks and a sign are fine).
 */
import * as os from 'node:os';
import { z } from 'zod';
import { UsageError } from './errors';

/** A raw string and where it came from: the flag (`--nnodes`) or variable (`PET_NNODES`). */
export interface RawValue {
  raw: string;
  from: string;
}

/** The UsageError for a raw value: `${from} ${raw}: ${problem}`. */
export const usage = (value: RawValue, problem: string): UsageError =>
  UsageError.invalid(value.from, value.raw, problem);

/** Parse a raw value; a failure becomes a one-line UsageError naming the flag and the value. */
export function parseValue<T extends z.ZodTypeAny>(schema: T, value: RawValue): z.output<T> {
  const r = schema.safeParse(value.raw);
  if (r.success) return r.data;
  throw usage(value, r.error.issues[0]?.message ?? 'invalid value');
}

const INT = /^\s*[+-]?\d+\s*$/;
const FLOAT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/** An integer >= `min`; one message for both "not a number" and "too small". */
export const intAtLeast = (min: number) => {
  const message = `must be an integer >= ${min}`;
  return z
    .string()
    .regex(INT, message)
    .transform(Number)
    .pipe(z.number().int().min(min, message));
};

/** Seconds (a float) compiled to whole milliseconds; `positive` or merely `>= 0`. */
export const secondsToMs = (bound: 'positive' | 'nonnegative') => {
  const message = bound === 'positive' ? 'must be a positive number' : 'must be a number >= 0';
  const seconds = z.number().finite(message);
  return z
    .string()
    .regex(FLOAT, message)
    .transform(Number)
    .pipe(bound === 'positive' ? seconds.positive(message) : seconds.nonnegative(message))
    .transform((s) => {
      const ms = Math.round(s * 1000);
      return bound === 'positive' ? Math.max(1, ms) : ms;
    });
};

/** `--nnodes N|MIN:MAX`. */
export const nnodesSchema = z.string().transform((s, ctx) => {
  const m = /^\s*([+-]?\d+)\s*(?::\s*([+-]?\d+)\s*)?$/.exec(s);
  if (!m) {
    ctx.addIssue({ code: 'custom', message: 'expected N or MIN:MAX' });
    return z.NEVER;
  }
  const minNodes = Number(m[1]);
  const maxNodes = m[2] === undefined ? minNodes : Number(m[2]);
  if (minNodes < 1 || maxNodes < 1) {
    ctx.addIssue({ code: 'custom', message: 'must be at least 1' });
    return z.NEVER;
  }
  if (minNodes > maxNodes) {
    ctx.addIssue({ code: 'custom', message: `minimum (${minNodes}) exceeds maximum (${maxNodes})` });
    return z.NEVER;
  }
  return { minNodes, maxNodes };
});

/** `--nproc-per-node N|cpu|auto`; there are no accelerators here, so auto means cpu. */
export const nprocSchema = (cpuCount: number) =>
  z.string().transform((s, ctx) => {
    if (s === 'cpu' || s === 'auto') return Math.max(1, cpuCount);
    if (!INT.test(s)) {
      const gpu = ['gpu', 'xpu', 'cuda', 'mps'].includes(s);
      const message = gpu
        ? 'telastic runs CPU workers only; use a number, cpu or auto'
        : 'expected a number, cpu or auto';
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    const n = Number(s);
    if (n < 1) {
      ctx.addIssue({ code: 'custom', message: 'must be at least 1' });
      return z.NEVER;
    }
    return n;
  });

/** torchrun's `Std.from_str`: `0|1|2|3`, or `LOCAL_RANK:0-3` pairs joined by commas. Kept raw. */
export const stdSpecSchema = z
  .string()
  .regex(
    /^([0-3]|(\d+:[0-3],)*\d+:[0-3])$/,
    'expected 0-3 or LOCAL_RANK:0-3,… (0 none, 1 stdout, 2 stderr, 3 both)',
  );

/** `--local-ranks-filter 0,1,2`; empty means no filter. Sorted, without duplicates. */
export const localRanksSchema = z.string().transform((s, ctx) => {
  if (s.trim() === '') return undefined;
  const parts = s.split(',');
  if (!parts.every((p) => /^\s*\+?\d+\s*$/.test(p))) {
    ctx.addIssue({ code: 'custom', message: 'expected a comma-separated list of local ranks, e.g. 0,1,2' });
    return z.NEVER;
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
});

/** A `PET_*` switch as torchrun's `check_env` reads it: `bool(int(value))`. */
export const petSwitchSchema = z
  .string()
  .regex(INT, 'expected 0 or 1')
  .transform((s) => Number(s) !== 0);

/** A boolean environment variable as the Temporal CLI (Go's strconv.ParseBool) reads it. */
export const envBoolSchema = z.string().transform((s, ctx) => {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(s)) return false;
  ctx.addIssue({ code: 'custom', message: 'expected true or false' });
  return z.NEVER;
});

/** `HOST[:PORT]` (IPv6 in brackets); the port defaults to Temporal's 7233. */
export const hostPortSchema = z.string().transform((s, ctx) => {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(s.trim());
  const port = m?.[2] === undefined ? 7233 : Number(m[2]);
  if (!m || port < 1 || port > 65535) {
    ctx.addIssue({ code: 'custom', message: 'expected HOST:PORT' });
    return z.NEVER;
  }
  return `${m[1]}:${port}`;
});

/** A value that must not be empty (role, namespace, paths, task queue). */
export const nonEmpty = z.string().min(1, 'must not be empty');

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A positive duration in milliseconds: `90s`, `30m`, `24h`, `7d`, `1h30m`; a bare number is seconds. */
export const durationToMs = z.string().transform((s, ctx) => {
  const text = s.trim();
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  let ms: number;
  if (FLOAT.test(text)) ms = Number(text) * 1000;
  else if (parts.length && parts.map((p) => p[0]).join('') === text) ms = parts.reduce((sum, p) => sum + Number(p[1]) * DURATION_UNITS[p[2]!]!, 0);
  else {
    ctx.addIssue({ code: 'custom', message: 'expected a duration such as 90s, 30m, 24h or 7d' });
    return z.NEVER;
  }
  if (!(ms > 0) || !Number.isFinite(ms)) {
    ctx.addIssue({ code: 'custom', message: 'must be a positive duration' });
    return z.NEVER;
  }
  return Math.round(ms);
});

/** A signal a process can catch, by name: `SIGUSR1`, `USR1`, `sigusr2`. */
export const catchableSignalSchema = z.string().transform((s, ctx) => {
  const name = s.trim().toUpperCase().replace(/^(?!SIG)/, 'SIG');
  if (!(name in os.constants.signals) || name === 'SIGKILL' || name === 'SIGSTOP') {
    ctx.addIssue({ code: 'custom', message: 'expected a signal a process can catch, such as SIGUSR1 or SIGUSR2' });
    return z.NEVER;
  }
  return name as NodeJS.Signals;
});

/**
 * `--signals-to-handle SIGTERM,SIGINT,…`: signal names as Python's `getattr(signal, name.strip())`
 * takes them (exact, with the SIG prefix). torch logs and skips a name it does not know; here it
 * is an error, as is SIGKILL or SIGSTOP (which torch's `signal.signal` rejects with a crash).
 */
export const signalListSchema = z.string().transform((s, ctx) => {
  const names = s.split(',').map((n) => n.trim());
  const bad = names.find((n) => !/^SIG[A-Z0-9]+$/.test(n) || !(n in os.constants.signals) || n === 'SIGKILL' || n === 'SIGSTOP');
  if (bad !== undefined) {
    ctx.addIssue({ code: 'custom', message: `${bad === '' ? 'empty signal name' : `${bad} is not a signal a process can catch`}: expected names such as SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1` });
    return z.NEVER;
  }
  return [...new Set(names)] as NodeJS.Signals[];
});

/**
 * torchrun's `comma_separated_list` (`--duplicate-stdout-filters`): split at commas, `,,` stands
 * for a comma inside an item. As in torch, an empty string is one empty filter, which every line
 * matches.
 */
export const commaListSchema = z.string().transform((s) => s.replace(/,,/g, '\0').split(',').map((item) => item.replace(/\0/g, ',')));

/** `--numa-binding`: torch.numa.binding.AffinityMode's values. */
export const NUMA_MODES = ['node', 'socket', 'exclusive', 'core-complex'] as const;
export type NumaMode = (typeof NUMA_MODES)[number];
export const numaModeSchema = z.enum(NUMA_MODES, { errorMap: () => ({ message: `expected one of ${NUMA_MODES.join(', ')}` }) });

/** `--event-log-handler`: the names torch.distributed.elastic.events.handlers registers. */
export const EVENT_LOG_HANDLERS = ['null', 'console', 'dynamic_rendezvous'] as const;
export const eventLogHandlerSchema = z.enum(EVENT_LOG_HANDLERS, { errorMap: () => ({ message: `expected one of ${EVENT_LOG_HANDLERS.join(', ')} (the handlers torch registers)` }) });
