/** Durations as flags take them (`telastic nodes --window 24h`). */
import { durationToMs, parseValue } from '../../src/config/values';

const parse = (raw: string) => parseValue(durationToMs, { raw, from: '--window' });

test.each([
  ['24h', 86_400_000], ['90s', 90_000], ['30m', 1_800_000], ['7d', 604_800_000], ['1h30m', 5_400_000], ['250ms', 250], ['1.5h', 5_400_000], [' 45 ', 45_000],
])('%j is %d ms', (raw, ms) => expect(parse(raw)).toBe(ms));

test.each([
  ['soon', '--window soon: expected a duration such as 90s, 30m, 24h or 7d'],
  ['24 h', '--window "24 h": expected a duration such as 90s, 30m, 24h or 7d'],
  ['0h', '--window 0h: must be a positive duration'],
  ['-5m', '--window -5m: expected a duration such as 90s, 30m, 24h or 7d'],
  ['', '--window "": expected a duration such as 90s, 30m, 24h or 7d'],
])('%j is rejected in one line', (raw, message) => expect(() => parse(raw)).toThrow(message));
