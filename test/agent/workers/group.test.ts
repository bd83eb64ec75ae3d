/** A worker group of real processes and real signals: success, first failure, stop, grandchildren. */
import { readFileSync, writeFileSync } from 'fs';
import { join } from 'path';
import { startWorkerGroup, Std, type GroupOptions, type WorkerSpec } from '../../../src/agent/workers';
import { alive, captureConsole, readWhenWritten, removeTempDirs, shWorker, tempDir } from '../helpers';

const FIXTURES = join(__dirname, '..', 'fixtures');

function group(workers: WorkerSpec[], extra: Partial<GroupOptions> = {}) {
  const { console } = captureConsole();
  return startWorkerGroup({ workers, shutdownTimeoutMs: 2_000, monitorIntervalMs: 20, output: { redirects: Std.NONE, tee: Std.NONE, console }, ...extra });
}

afterAll(removeTempDirs);

describe('startWorkerGroup', () => {
  it('succeeds when every worker exits 0', async () => {
    const g = group([0, 1, 2].map((lr) => shWorker(lr, 'exit 0')));
    expect(g.pids).toHaveLength(3);
    const r = await g.wait();
    expect(r.state).toBe('succeeded');
    expect(r.exits.map((e) => [e.localRank, e.rank, e.exitCode, e.signal, e.stopped])).toEqual([
      [0, 10, 0, null, false],
      [1, 11, 0, null, false],
      [2, 12, 0, null, false],
    ]);
    expect(r.exits.map((e) => e.pid)).toEqual(g.pids);
  });

  it('fails at the first failure and stops the others', async () => {
    const g = group([shWorker(0, 'sleep 1000'), shWorker(1, 'exit 3'), shWorker(2, 'sleep 1000')]);
    const r = await g.wait();
    if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
    expect(r.failure).toMatchObject({ localRank: 1, rank: 11, pid: g.pids[1], exitCode: 3, signal: null });
    expect(r.exits.map((e) => [e.localRank, e.exitCode, e.signal, e.stopped])).toEqual([
      [0, null, 'SIGTERM', true],
      [1, 3, null, false],
      [2, null, 'SIGTERM', true],
    ]);
    for (const pid of g.pids) expect(alive(pid)).toBe(false);
  });

  it('reports a worker killed by SIGKILL by its signal', async () => {
    const r = await group([shWorker(0, 'kill -9 $$'), shWorker(1, 'sleep 1000')]).wait();
    if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
    expect(r.failure).toMatchObject({ localRank: 0, rank: 10, exitCode: null, signal: 'SIGKILL' });
  });

  it("reads the failure message from torch's error file", async () => {
    const dir = tempDir();
    const errorFile = join(dir, 'error.json');
    const w: WorkerSpec = { ...shWorker(0, ''), file: 'python3', args: ['-u', join(FIXTURES, 'error_file_worker.py')] };
    w.env.TORCHELASTIC_ERROR_FILE = errorFile;
    const r = await group([w]).wait();
    if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
    expect(r.failure).toMatchObject({ exitCode: 1, message: 'RuntimeError: boom at step 7' });
  });

  it('ignores an error file left by an earlier round', async () => {
    const errorFile = join(tempDir(), 'error.json');
    writeFileSync(errorFile, JSON.stringify({ message: 'stale failure of round 1' }));
    const r = await group([shWorker(0, 'echo "fatal: out of disk" >&2; exit 2', { TORCHELASTIC_ERROR_FILE: errorFile })]).wait();
    if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
    expect(r.failure.message).toBe('fatal: out of disk');
  });

  it('reports a command that cannot be executed as a shell would', async () => {
    const r = await group([{ ...shWorker(0, ''), file: '/nonexistent/train', args: [] }]).wait();
    if (r.state !== 'failed') throw new Error(`expected failed, got ${r.state}`);
    expect(r.failure.exitCode).toBe(127);
    expect(r.failure.message).toMatch(/failed to execute \/nonexistent\/train/);
  });

  it('stop() SIGKILLs workers that ignore SIGTERM after the grace period', async () => {
    const dir = tempDir();
    const script = (lr: number) => `trap '' TERM; echo ready > ${dir}/ready${lr}; while :; do sleep 1; done`;
    const g = group([shWorker(0, script(0)), shWorker(1, script(1))], { shutdownTimeoutMs: 300 });
    await Promise.all([0, 1].map((lr) => readWhenWritten(join(dir, `ready${lr}`))));
    const t0 = Date.now();
    await g.stop('test is done');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    const r = await g.wait();
    expect(r).toMatchObject({ state: 'stopped', reason: 'test is done' });
    expect(r.exits.map((e) => [e.signal, e.stopped])).toEqual([
      ['SIGKILL', true],
      ['SIGKILL', true],
    ]);
    for (const pid of g.pids) expect(alive(pid)).toBe(false);
  });

  it('stop(reason, signal) sends that signal to each process group (--signals-to-handle), SIGKILL after the grace', async () => {
    const dir = tempDir();
    const script = (lr: number) => `trap 'echo HUP > ${dir}/got${lr}; exit 0' HUP; trap '' TERM; sleep 1000 & echo ready > ${dir}/ready${lr}; wait`;
    const g = group([shWorker(0, script(0)), shWorker(1, script(1))]);
    await Promise.all([0, 1].map((lr) => readWhenWritten(join(dir, `ready${lr}`))));
    await g.stop('agent got SIGHUP', 'SIGHUP');
    const r = await g.wait();
    expect(r).toMatchObject({ state: 'stopped', reason: 'agent got SIGHUP' });
    expect([0, 1].map((lr) => readFileSync(join(dir, `got${lr}`), 'utf8'))).toEqual(['HUP\n', 'HUP\n']);
    expect(r.exits.map((e) => [e.exitCode, e.stopped])).toEqual([[0, true], [0, true]]);
  });

  it('stop() takes the grandchildren with it', async () => {
    const dir = tempDir();
    const g = group([shWorker(0, `sleep 1000 & echo $! > ${dir}/gc; wait`)]);
    const grandchild = Number(await readWhenWritten(join(dir, 'gc')));
    expect(alive(grandchild)).toBe(true);
    await g.stop();
    expect(alive(grandchild)).toBe(false);
    expect(alive(g.pids[0]!)).toBe(false);
  });

  it('leaves no grandchild of a successful worker behind', async () => {
    const dir = tempDir();
    const g = group([shWorker(0, `sleep 1000 & echo $! > ${dir}/gc; exit 0`)], { shutdownTimeoutMs: 5_000 });
    const grandchild = Number(await readWhenWritten(join(dir, 'gc')));
    const r = await g.wait();
    expect(r.state).toBe('succeeded');
    expect(alive(grandchild)).toBe(false);
  });

  it('stop() after the group ended changes nothing', async () => {
    const g = group([shWorker(0, 'exit 0')]);
    expect((await g.wait()).state).toBe('succeeded');
    await g.stop('too late');
    expect((await g.wait()).state).toBe('succeeded');
  });

  it('signal() reaches each running worker itself, not its grandchildren, and is a no-op once stopping', async () => {
    const dir = tempDir();
    // The worker counts USR1s; its grandchild would die of one (the default action).
    const script = (lr: number) => `sleep 1000 & echo $! > ${dir}/gc${lr}; n=0; trap 'n=$((n+1)); echo $n > ${dir}/usr1-${lr}' USR1; echo ready > ${dir}/ready${lr}; while :; do sleep 0.05; done`;
    const g = group([shWorker(0, script(0)), shWorker(1, script(1))], { shutdownTimeoutMs: 300 });
    await Promise.all([0, 1].map((lr) => readWhenWritten(join(dir, `ready${lr}`))));
    expect(g.signal!('SIGUSR1')).toBe(2);
    expect(await Promise.all([0, 1].map((lr) => readWhenWritten(join(dir, `usr1-${lr}`))))).toEqual(['1', '1']);
    for (const lr of [0, 1]) expect(alive(Number(await readWhenWritten(join(dir, `gc${lr}`))))).toBe(true);
    await g.stop();
    expect(g.signal!('SIGUSR1')).toBe(0);
  });

  it('signal() skips a worker with no handler for the signal (it would die of it)', async () => {
    const dir = tempDir();
    const g = group([shWorker(0, `echo ready > ${dir}/ready; while :; do sleep 0.05; done`)], { shutdownTimeoutMs: 300 });
    await readWhenWritten(join(dir, 'ready'));
    expect(g.signal!('SIGUSR1')).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(alive(g.pids[0]!)).toBe(true);
    await g.stop();
  });
});
