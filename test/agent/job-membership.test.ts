import { nextRetryMs } from '../../src/agent/job-membership';

describe('nextRetryMs (an unanswered ask after a nudge)', () => {
  it('starts near 0.5 s and doubles up to the poll interval, jittered by at most a quarter', () => {
    for (let trial = 0; trial < 200; trial++) {
      let ms = 0;
      const seen: number[] = [];
      for (let i = 0; i < 8; i++) seen.push((ms = nextRetryMs(ms, 20_000)));
      expect(seen[0]).toBeGreaterThanOrEqual(375);
      expect(seen[0]).toBeLessThanOrEqual(625);
      for (const s of seen) expect(s).toBeLessThanOrEqual(25_000);
      // Never stuck at the floor: after a few refusals it waits seconds, not half a second.
      expect(seen[5]).toBeGreaterThan(2_000);
    }
  });

  it('never waits longer than a quarter past the poll interval of a small job', () => {
    let ms = 0;
    for (let i = 0; i < 20; i++) {
      ms = nextRetryMs(ms, 1_000);
      expect(ms).toBeGreaterThanOrEqual(375);
      expect(ms).toBeLessThanOrEqual(1_250);
    }
  });
});
