/** torchrun's -r/--redirects, -t/--tee and --local-ranks-filter, as pure routing decisions. */
import { parseStd, routeStreams, Std, StdSpecError, stdFor } from '../../../src/agent/workers';

describe('parseStd', () => {
  it.each([
    ['0', Std.NONE],
    ['1', Std.OUT],
    ['2', Std.ERR],
    ['3', Std.ALL],
    ['0:1,1:2', { 0: Std.OUT, 1: Std.ERR }],
    ['0:3,1:0,2:1,3:2', { 0: Std.ALL, 1: Std.NONE, 2: Std.OUT, 3: Std.ERR }],
    ['12:3', { 12: Std.ALL }],
  ])('parses %p', (value, expected) => {
    expect(parseStd(value)).toEqual(expected);
  });

  it.each(['', '4', '-1', 'out', '0:4', '0:1,', '0=1', '1,2', ':1'])('rejects %p with one line naming it', (value) => {
    let err: unknown;
    try {
      parseStd(value);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StdSpecError);
    expect((err as Error).message).toContain(`'${value}'`);
    expect((err as Error).message).not.toContain('\n');
  });

  it('gives ranks a map does not list Std.NONE', () => {
    expect(stdFor(parseStd('1:3'), 0)).toBe(Std.NONE);
    expect(stdFor(parseStd('1:3'), 1)).toBe(Std.ALL);
    expect(stdFor(parseStd('2'), 7)).toBe(Std.ERR);
  });
});

describe('routeStreams', () => {
  const files = { stdout: 'o.log', stderr: 'e.log' };
  const route = (o: Partial<Parameters<typeof routeStreams>[0]>, localRank = 0) =>
    routeStreams({ logDir: 'logs', redirects: Std.NONE, tee: Std.NONE, ...o }, localRank, files);

  it('sends everything to the console by default', () => {
    expect(route({})).toEqual({ stdout: { file: null, console: true }, stderr: { file: null, console: true } });
  });

  it('sends a redirected stream to its file only, a teed one to both', () => {
    expect(route({ redirects: Std.OUT, tee: Std.ERR })).toEqual({
      stdout: { file: 'o.log', console: false },
      stderr: { file: 'e.log', console: true },
    });
  });

  it('keeps ranks outside --local-ranks-filter off the console but still writes their files', () => {
    expect(route({ tee: Std.ALL, localRanksFilter: [1] }, 0)).toEqual({
      stdout: { file: 'o.log', console: false },
      stderr: { file: 'e.log', console: false },
    });
    expect(route({ tee: Std.ALL, localRanksFilter: [1] }, 1).stdout).toEqual({ file: 'o.log', console: true });
  });

  it('has no files without a log dir', () => {
    expect(route({ logDir: undefined, redirects: Std.ALL })).toEqual({
      stdout: { file: null, console: true },
      stderr: { file: null, console: true },
    });
  });
});
