/**
 * The 64-agent crash of issue 21 (`async hook stack has become corrupted`, in the SDK's workflow
 * worker thread), reproduced and fixed. The SDK ends a workflow activation that runs longer than
 * `isolateExecutionTimeout` (5 s by default, wall-clock); when that fires inside an async context
 * Node aborts the whole process. On 2 cores shared by 64 agents a short activation overran 5 s.
 * telastic's workflow Workers allow 60 s (WORKFLOW_WORKER_OPTIONS, src/temporal/workers.ts); the
 * second case creates its Worker with those options.
 */
import { TIMING } from '../../src/temporal/workers';
import { testAddress } from '../setup/temporal';
import { spawnFixture, type Child } from './child';

const children: Child[] = [];
afterAll(() => {
  for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
});

async function run(timeout: string, busyMs: number) {
  const c = spawnFixture('busy-worker.ts', [testAddress(), timeout, String(busyMs)]);
  children.push(c);
  const exit = await c.exited;
  return { ...exit, stdout: c.stdout.join('\n'), stderr: c.stderr.join('\n') };
}

test('an activation overrunning the isolate timeout inside an async context aborts the process (the crash, small: 50 ms, 300 ms busy)', async () => {
  const r = await run('50ms', 300);
  expect(r.stdout).not.toContain('result done');
  expect(r.code === 0 && r.signal === null).toBe(false);
  expect(r.stderr).toContain('async hook stack has become corrupted');
  expect(r.stderr).toContain('node::worker::MessagePort::OnMessage');
}, 60_000);

test(`with telastic's isolate timeout (${TIMING.isolateExecutionTimeout}) an activation busy longer than the SDK's default 5 s completes`, async () => {
  const r = await run('product', 5_500);
  expect({ code: r.code, stdout: r.stdout.split('\n').filter((l) => l.startsWith('result')), stderr: r.code === 0 ? '' : r.stderr.slice(-2000) }).toEqual({ code: 0, stdout: ['result done'], stderr: '' });
}, 120_000);
