/** The shared process helpers (test-support/agents.ts), and what only the benchmarks need. */
export { BIN, ROOT, alive, definedOnly, startAgent, startTelastic, stopAll, waitFor, type Agent } from '../test-support/agents';

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
