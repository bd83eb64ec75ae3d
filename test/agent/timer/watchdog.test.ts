/**
 * The watchdog with a real FIFO, real worker processes and real signals: a worker whose timer
 * expires is killed with its signal and its failure names the timer; nothing else is ever
 * signalled; the FIFO is gone when the group ends.
 */
import { spawn } from 'child_process';
import { existsSync } from 'fs';
import { join } from 'path';
import { openTimerFifo } from '../../../src/agent/timer';
import { startWorkerGroup, Std, type WorkerSpec } from '../../../src/agent/workers';
import { alive, captureConsole, removeTempDirs, tempDir } from '../helpers';

const CLIENT = join(__dirname, '..', 'fixtures', 'timer_client.py');

function client(localRank: number, fifo: string, ...commands: (string | number)[]): WorkerSpec {
  return {
    localRank,
    rank: 10 + localRank,
    file: 'python3',
    args: ['-u', CLIENT, ...commands.map(String)],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TORCHELASTIC_TIMER_FILE: fifo },
  };
}

function logs() {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) => void lines.push({ level, obj, msg });
  return { lines, log: { info: at('info'), warn: at('warn') } as never };
}

function start(workers: (fifo: string) => WorkerSpec[]) {
  const fifo = openTimerFifo(join(tempDir(), 'watchdog_timer'));
  const { lines, log } = logs();
  const { console, text } = captureConsole();
  const group = startWorkerGroup({ workers: workers(fifo.path), shutdownTimeoutMs: 2_000, monitorIntervalMs: 20, output: { redirects: Std.NONE, tee: Std.NONE, console }, timerFifo: fifo, log });
  return { fifo, group, lines, text };
}

const others: number[] = [];
afterAll(() => {
  for (const pid of others) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  removeTempDirs();
});

test('an expired timer kills its worker with the requested signal; the failure names the timer; the rest are stopped', async () => {
  const t0 = Date.now();
  const { fifo, group } = start((f) => [client(0, f, 'sleep', 100), client(1, f, 'acquire', 'step', 0.4, 9, 0, 'sleep', 100)]);
  const r = await group.wait();
  if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
  expect(r.failure).toMatchObject({ localRank: 1, rank: 11, signal: 'SIGKILL', exitCode: null, message: 'watchdog timer "step" expired after 0.4 s' });
  // Killed within the watchdog's interval of the expiry: well before the worker's 100 s sleep.
  expect(r.failure.timestamp - t0).toBeLessThan(5_000);
  expect(r.exits.find((e) => e.localRank === 0)).toMatchObject({ stopped: true, signal: 'SIGTERM' });
  expect(existsSync(fifo.path)).toBe(false);
});

test('the signal is the one requested (SIGTERM here), and a timer released in time kills nothing', async () => {
  const { group } = start((f) => [
    client(0, f, 'acquire', 'fast', 0.5, 9, 0, 'release', 'fast', 'sleep', 1.0),
    client(1, f, 'sleep', 0.2, 'acquire', 'load', 0.3, 15, 0, 'sleep', 100),
  ]);
  const r = await group.wait();
  if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
  expect(r.failure).toMatchObject({ localRank: 1, signal: 'SIGTERM', message: 'watchdog timer "load" expired after 0.3 s' });
});

test('requests for a process outside the group, and bad requests, are logged and change nothing', async () => {
  const outsider = spawn('sleep', ['100'], { stdio: 'ignore' });
  others.push(outsider.pid!);
  const { group, lines } = start((f) => [
    client(0, f,
      'acquire', 'theirs', 0, 9, outsider.pid!, // a process that is not a worker
      'acquire', 'init', 0, 9, 1, // nor is init
      'raw', 'not json', 'raw', '{"version":1,"pid":"x"}',
      'sleep', 0.6),
  ]);
  const r = await group.wait();
  expect(r.state).toBe('succeeded');
  expect(alive(outsider.pid!)).toBe(true);
  const ignored = lines.filter((l) => l.msg.startsWith('watchdog timer request ignored')).map((l) => l.obj.reason);
  expect(ignored).toEqual([`pid ${outsider.pid} is not a running worker of this round`, 'pid 1 is not a running worker of this round', 'not JSON', 'pid: Expected number, received string']);
});
