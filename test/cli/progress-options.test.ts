/**
 * `--progress-timeout` and `--progress-start-timeout`: parsed to milliseconds, carried into the
 * job spec, and a start bound without the timeout it belongs to is refused, naming the flag.
 */
import { UsageError } from '../../src/cli/errors';
import { parseRunArgs, type RunSystemInfo } from '../../src/cli/run-options';
import { jobSpecSchema } from '../../src/job/spec';

const sys: RunSystemInfo = { cpuCount: 8, hostname: 'host-a', pid: 42, randomId: () => 'uuid-1' };
const run = (argv: string[]) => parseRunArgs(argv, {}, sys);

test('both bounds parse to milliseconds; the start bound is absent unless given', () => {
  expect(run(['--progress-timeout', '8s', '--progress-start-timeout', '2m', 't.py'])).toMatchObject({ progressTimeoutMs: 8_000, progressStartTimeoutMs: 120_000 });
  expect(run(['--progress-timeout', '8s', 't.py']).progressStartTimeoutMs).toBeUndefined();
});

test('--progress-start-timeout without --progress-timeout: one line naming the flag', () => {
  let message = '';
  try {
    run(['--progress-start-timeout', '2m', 't.py']);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    message = err.message;
  }
  expect(message).toMatch(/progress-start-timeout/i);
  expect(message).toContain('--progress-timeout');
  expect(message.split('\n')).toHaveLength(1);
});

test('--progress-start-timeout 0 is refused, naming the flag', () => {
  expect(() => run(['--progress-timeout', '8s', '--progress-start-timeout', '0', 't.py'])).toThrow(/--progress-start-timeout/);
});

test('the job spec refuses a start bound without the timeout, and names the field', () => {
  const base = { jobId: 'j', minNodes: 1, maxNodes: 1, nprocPerNode: 1, entrypoint: { script: 't.py', args: [] } };
  const r = jobSpecSchema.safeParse({ ...base, progressStartTimeoutMs: 60_000 });
  expect(r.success ? [] : r.error.issues.map((i) => i.path.join('.'))).toEqual(['progressStartTimeoutMs']);
  expect(jobSpecSchema.parse({ ...base, progressTimeoutMs: 8_000, progressStartTimeoutMs: 60_000 })).toMatchObject({ progressTimeoutMs: 8_000, progressStartTimeoutMs: 60_000 });
});
