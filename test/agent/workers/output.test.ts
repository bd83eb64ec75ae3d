/** Worker output with torchrun's --log-dir, -r/--redirects, -t/--tee and --local-ranks-filter. */
import { existsSync, readFileSync } from 'fs';
import { attemptLogDir, parseStd, startWorkerGroup, Std, workerLogPaths, type OutputOptions } from '../../../src/agent/workers';
import { captureConsole, removeTempDirs, shWorker, tempDir } from '../helpers';

afterAll(removeTempDirs);

const talk = (lr: number) => shWorker(lr, `echo out${lr}; echo err${lr} >&2`);

async function run(output: Omit<OutputOptions, 'console'>, script = talk) {
  const cap = captureConsole();
  const g = startWorkerGroup({ workers: [script(0), script(1)], shutdownTimeoutMs: 1_000, output: { ...output, console: cap.console } });
  return { result: await g.wait(), text: cap.text };
}

const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : null);

describe('worker output', () => {
  it('prefixes console lines with the global rank when there is no log dir', async () => {
    const { text } = await run({ redirects: Std.ALL, tee: Std.NONE }, (lr) => shWorker(lr, `echo out${lr}; printf 'err${lr} without newline' >&2`));
    expect(text.stdout.split('\n').filter(Boolean).sort()).toEqual(['[rank10]:out0', '[rank11]:out1']);
    expect(text.stderr.split('\n').filter(Boolean).sort()).toEqual(['[rank10]:err0 without newline', '[rank11]:err1 without newline']);
  });

  it('writes <log-dir>/<run id>/attempt_<n>/<local rank>/std{out,err}.log for redirected and teed streams', async () => {
    const logDir = attemptLogDir(tempDir(), 'job1', 0);
    expect(logDir).toMatch(/\/job1\/attempt_0$/);
    // -r 1 (every stdout to its file only), -t 0:2 (rank 0's stderr to its file and the console).
    const { text } = await run({ logDir, redirects: parseStd('1'), tee: parseStd('0:2') });
    const [r0, r1] = [0, 1].map((lr) => workerLogPaths(logDir, lr));
    expect([read(r0!.stdout), read(r0!.stderr), read(r1!.stdout), read(r1!.stderr)]).toEqual(['out0\n', 'err0\n', 'out1\n', null]);
    expect(text.stdout).toBe('');
    expect(text.stderr.split('\n').filter(Boolean).sort()).toEqual(['[rank10]:err0', '[rank11]:err1']);
  });

  it('shows only --local-ranks-filter ranks on the console, and still writes every file', async () => {
    const logDir = attemptLogDir(tempDir(), 'job1', 1);
    const { text } = await run({ logDir, redirects: Std.NONE, tee: Std.ALL, localRanksFilter: [1] });
    expect(text).toEqual({ stdout: '[rank11]:out1\n', stderr: '[rank11]:err1\n' });
    expect(read(workerLogPaths(logDir, 0).stdout)).toBe('out0\n');
    expect(read(workerLogPaths(logDir, 0).stderr)).toBe('err0\n');
  });

  it('--duplicate-*-filters: matching teed lines of every local rank go to the attempt\'s filtered_std{out,err}.log', async () => {
    const logDir = attemptLogDir(tempDir(), 'job1', 3);
    const script = (lr: number) => shWorker(lr, `echo apple${lr}; echo pear${lr}; echo kiwi${lr} >&2`);
    // Rank 0 tees both streams, rank 1 only stderr; rank 1's stdout is not teed, so never filtered.
    await run({ logDir, redirects: Std.NONE, tee: parseStd('0:3,1:2'), duplicateStdoutFilters: ['apple'], duplicateStderrFilters: ['kiwi'] }, script);
    expect(read(`${logDir}/filtered_stdout.log`)).toBe('[rank10]:apple0\n');
    expect(read(`${logDir}/filtered_stderr.log`)!.split('\n').filter(Boolean).sort()).toEqual(['[rank10]:kiwi0', '[rank11]:kiwi1']);
    // No filters, no file; filters and nothing teed: an empty file, as torch.
    const plain = attemptLogDir(tempDir(), 'job1', 4);
    await run({ logDir: plain, redirects: Std.ALL, tee: Std.NONE, duplicateStdoutFilters: ['apple'] }, script);
    expect([read(`${plain}/filtered_stdout.log`), read(`${plain}/filtered_stderr.log`)]).toEqual(['', null]);
  });

  it('takes a failure message from a redirected stderr.log', async () => {
    const logDir = attemptLogDir(tempDir(), 'job1', 2);
    const { result, text } = await run({ logDir, redirects: Std.ALL, tee: Std.NONE }, (lr) =>
      shWorker(lr, lr === 0 ? 'echo starting >&2; echo "ValueError: bad shape" >&2; exit 1' : 'sleep 1000'),
    );
    expect(text).toEqual({ stdout: '', stderr: '' });
    expect(result).toMatchObject({ state: 'failed', failure: { localRank: 0, exitCode: 1, message: 'ValueError: bad shape' } });
  });
});
