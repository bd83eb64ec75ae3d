/**
 * torchrun's `-r/--redirects`, `-t/--tee` and `--local-ranks-filter`, as pure functions: parse a
 * setting, then decide where each stream of each local rank goes.
 */
import { StdSpecError } from './errors';
import { Std, type OutputOptions, type StdSpec } from './types';

const VALUE = /^[0-3]$/;
// torch accepts single-digit local ranks only (`\d:[0123]`); more digits are accepted here.
const MAPPING = /^\d+:[0-3](,\d+:[0-3])*$/;

/** Parses torchrun's forms: "0".."3" for every local rank, or "0:1,1:2" per local rank. */
export function parseStd(value: string): StdSpec {
  const v = value.trim();
  if (VALUE.test(v)) return Number(v) as Std;
  if (!MAPPING.test(v)) throw new StdSpecError(value);
  const map: Record<number, Std> = {};
  for (const pair of v.split(',')) {
    const [rank, std] = pair.split(':');
    map[Number(rank)] = Number(std) as Std;
  }
  return map;
}

/** The setting of one local rank; ranks a map does not list get `Std.NONE`. */
export function stdFor(spec: StdSpec, localRank: number): Std {
  if (typeof spec === 'number') return spec;
  return spec[localRank] ?? Std.NONE;
}

/** Where one stream of one worker goes. */
export interface StreamRoute {
  /** The log file, or null. */
  file: string | null;
  /** Whether its lines reach the agent's console (prefixed by rank). */
  console: boolean;
}

/**
 * torch's `DefaultLogsSpecs.reify`: a stream redirected or teed goes to its file (when there is a
 * log dir); it reaches the console when it is not redirected, or is teed; and only for ranks in
 * `localRanksFilter` when one is given.
 */
export function routeStreams(
  output: Pick<OutputOptions, 'logDir' | 'redirects' | 'tee' | 'localRanksFilter'>,
  localRank: number,
  files: { stdout: string; stderr: string },
): { stdout: StreamRoute; stderr: StreamRoute } {
  const tee = stdFor(output.tee, localRank);
  const toFile = output.logDir === undefined ? Std.NONE : stdFor(output.redirects, localRank) | tee;
  const shown = output.localRanksFilter === undefined || output.localRanksFilter.includes(localRank);
  const route = (flag: number, file: string): StreamRoute => {
    const inFile = (toFile & flag) !== 0;
    return { file: inFile ? file : null, console: shown && (!inFile || (tee & flag) !== 0) };
  };
  return { stdout: route(Std.OUT, files.stdout), stderr: route(Std.ERR, files.stderr) };
}
