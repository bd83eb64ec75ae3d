/** The scan's building blocks (src/checkpoints/bounded.ts, retry.ts): bounds, order, retries. */
import { mapBounded, SLICE, sortSliced } from '../../src/checkpoints/bounded';
import { retryTransient } from '../../src/checkpoints/retry';

const errno = (code: string) => Object.assign(new Error(code), { code });
const turn = () => new Promise((r) => setImmediate(r));
/** A call that fails with `code` every time, counting its calls. */
function failing(code: string): { calls: number; fn: () => Promise<never> } {
  const f = { calls: 0, fn: async (): Promise<never> => {
    f.calls++;
    throw errno(code);
  } };
  return f;
}

describe('mapBounded', () => {
  it('never has more than `limit` calls in flight, and returns results by index', async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapBounded([...Array(50).keys()], 4, async (n) => {
      most = Math.max(most, ++inFlight);
      for (let i = 0; i < n % 3; i++) await turn();
      inFlight--;
      return n * 2;
    });
    expect(most).toBe(4);
    expect(out).toEqual([...Array(50).keys()].map((n) => n * 2));
  });

  it('starts nothing from the index where `stop` turns true', async () => {
    const started: number[] = [];
    let found = false;
    const out = await mapBounded([...Array(100).keys()], 3, async (n) => {
      started.push(n);
      await turn();
      if (n === 10) found = true;
      return n;
    }, () => found);
    // Items 11 and 12 may have started beside 10; nothing after them did.
    expect(Math.max(...started)).toBeLessThanOrEqual(12);
    expect(started.slice(0, 11)).toEqual([...Array(11).keys()]);
    expect(out.length).toBe(100);
    expect(out[50]).toBeUndefined();
  });
});

describe('sortSliced', () => {
  it.each([0, 1, SLICE - 1, SLICE, 3 * SLICE + 17, 20_011])('sorts %p items like Array.prototype.sort, stably', async (n) => {
    const items = Array.from({ length: n }, (_, i) => ({ key: (i * 7919) % 97, i }));
    const byKey = (a: { key: number }, b: { key: number }) => b.key - a.key;
    const sorted = await sortSliced(items, byKey);
    expect(sorted).toEqual([...items].sort(byKey));
    expect(sorted.every((x, j) => j === 0 || x.key < sorted[j - 1]!.key || x.i > sorted[j - 1]!.i)).toBe(true);
  });

  it('gives the event loop back while it sorts', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    await sortSliced(Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 100_003), (a, b) => a - b);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(5);
  });
});

describe('retryTransient', () => {
  it('tries again after EMFILE and the like, until it works', async () => {
    const codes = ['EMFILE', 'ENFILE', 'EAGAIN'];
    let calls = 0;
    await expect(retryTransient(async () => (calls < codes.length ? Promise.reject(errno(codes[calls++]!)) : 'read'), [1, 1, 1, 1])).resolves.toBe('read');
    expect(calls).toBe(3);
  });

  it('throws the last transient failure once the delays run out', async () => {
    const f = failing('EMFILE');
    await expect(retryTransient(f.fn, [1, 1])).rejects.toMatchObject({ code: 'EMFILE' });
    expect(f.calls).toBe(3);
  });

  it.each(['ENOENT', 'EACCES', 'EIO'])('does not retry %s', async (code) => {
    const f = failing(code);
    await expect(retryTransient(f.fn, [1, 1])).rejects.toMatchObject({ code });
    expect(f.calls).toBe(1);
  });
});
