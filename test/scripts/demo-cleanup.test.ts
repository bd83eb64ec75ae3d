/**
 * The demo's cleanup path (scripts/demo-lib.sh), for real: `telastic dev` started the way
 * scripts/demo.sh starts it (needs `npm run build`), then the script ends, is interrupted with
 * Ctrl-C, or gets SIGTERM. Every process it started must be gone within a bound, and the
 * server's ports free for the next demo.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort, isListening } from '../../src/temporal/ports';
import { isAlive, waitGone } from '../temporal/child';

const FIXTURE = path.join(__dirname, 'fixtures', 'demo-dev.sh');
/** From the end of the script (or the signal) until nothing it started is left. */
const BOUND_MS = 5_000;

interface Demo {
  proc: ChildProcess;
  exited: Promise<void>;
  ports: number[];
  /** Every process below the script's shell, while it ran: dev, its Temporal server, the agent. */
  tree: number[];
  dev: number;
}

let started: Demo | undefined;
let dir: string | undefined;

afterEach(() => {
  // On a failed test, leave nothing behind either (the server is in its own process group).
  for (const pid of started?.tree ?? []) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  if (started?.proc.exitCode === null) started.proc.kill('SIGKILL');
  started = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Pids of every process below `pid` (Linux /proc; children of every thread). */
function descendants(pid: number): number[] {
  const found: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return found;
  }
  for (const task of tasks) {
    let text = '';
    try {
      text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    } catch {
      continue;
    }
    for (const child of text === '' ? [] : text.split(/\s+/).map(Number)) found.push(child, ...descendants(child));
  }
  return found;
}

async function startDemo(mode: 'exit' | 'serve'): Promise<Demo> {
  dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-demo-'));
  const ports = [await freePort(), await freePort()];
  // In its own process group, as a terminal's foreground job: Ctrl-C is SIGINT to the group.
  const proc = spawn('bash', [FIXTURE, mode, dir, ...ports.map(String)], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let out = '';
  let err = '';
  proc.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const pids = await new Promise<RegExpMatchArray>((resolve, reject) => {
    proc.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^dev (\d+) agent (\d+)$/m.exec(out);
      if (m) resolve(m);
    });
    void exited.then(() => reject(new Error(`the script ended before starting dev: ${out}${err}`)));
  });
  const tree = descendants(proc.pid as number);
  started = { proc, exited, ports, tree, dev: Number(pids[1]) };
  return started;
}

/** Resolves with how long it took until none of `pids` is left, or rejects after BOUND_MS. */
async function allGone(pids: number[], since: number): Promise<number> {
  for (const pid of pids) {
    if (!(await waitGone(pid, Math.max(0, since + BOUND_MS - Date.now())))) {
      throw new Error(`pid ${pid} (${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 80)}) still runs ${BOUND_MS} ms after the demo ended`);
    }
  }
  return Date.now() - since;
}

async function expectCleanedUp(demo: Demo, since: number): Promise<void> {
  await demo.exited;
  await allGone(demo.tree, since);
  for (const port of demo.ports) await expect(isListening('127.0.0.1', port)).resolves.toBe(false);
}

function expectFullTree(demo: Demo): void {
  // bash's own, node's dev, its Temporal server (under setpriv, or not) and the stand-in agent.
  expect(demo.tree).toContain(demo.dev);
  expect(descendants(demo.dev).length).toBeGreaterThanOrEqual(1);
  expect(demo.tree.length).toBeGreaterThanOrEqual(3);
}

test('when the demo script ends, dev, its Temporal server and the agents are gone and the ports free', async () => {
  const demo = await startDemo('exit');
  expectFullTree(demo);
  const since = Date.now();
  demo.proc.stdin?.end();
  await expectCleanedUp(demo, since);
});

test('Ctrl-C (SIGINT to the whole foreground group) while the demo keeps the Web UI up leaves nothing running', async () => {
  const demo = await startDemo('serve');
  expectFullTree(demo);
  for (const port of demo.ports) await expect(isListening('127.0.0.1', port)).resolves.toBe(true);
  const since = Date.now();
  process.kill(-(demo.proc.pid as number), 'SIGINT');
  await expectCleanedUp(demo, since);
});

test('SIGTERM to the demo script alone leaves nothing running', async () => {
  const demo = await startDemo('serve');
  expectFullTree(demo);
  const since = Date.now();
  demo.proc.kill('SIGTERM');
  await expectCleanedUp(demo, since);
});
