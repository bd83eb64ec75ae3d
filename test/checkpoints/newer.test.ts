/** Whether a checkpoint is newer than the one seen when a checkpoint-first drain was asked (src/checkpoints/newer.ts). */
import { isNewerCheckpoint } from '../../src/checkpoints/newer';

const ck = (step: number | null, time: string, path = `/ckpt/ckpt_${step}.pt`) => ({ path, step, time });
const T0 = Date.parse('2026-12-01T12:00:01Z');

describe('isNewerCheckpoint', () => {
  const base = ck(100, '2026-12-01T12:00:00Z');
  test.each([
    ['none found', null, base, false],
    ['the baseline itself', base, base, false],
    ['a higher step', ck(101, '2026-12-01T12:00:00Z'), base, true],
    ['a lower step written later (steps win)', ck(99, '2026-12-01T12:00:09Z'), base, false],
    ['no step: a later time', ck(null, '2026-12-01T12:00:05Z', '/ckpt/x'), base, true],
    ['no step: an earlier time', ck(null, '2026-12-01T11:59:00Z', '/ckpt/x'), base, false],
    ['no baseline: written after the request', ck(5, '2026-12-01T12:00:02Z'), null, true],
    ['no baseline: written before the request', ck(5, '2026-12-01T12:00:00Z'), null, false],
  ])('%s', (_name, found, baseline, expected) => {
    expect(isNewerCheckpoint(found, baseline, T0)).toBe(expected);
  });
});
