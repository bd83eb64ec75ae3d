/**
 * The peer watch's sockets (src/agent/peer-watch.ts), with a real peer agent in a child process
 * (test/agent/fixtures/peer-agent.js): killed with SIGKILL, its connection closes at once and the
 * watcher says so; frozen with SIGSTOP, it does not (the heartbeat timeout catches that); a round
 * it ends normally, or an agent that stops normally, is blamed for nothing.
 */
import type { ChildProcess } from 'node:child_process';
import pino from 'pino';
import { createPeerWatch, type PeerLost, type PeerWatch, type Watching } from '../../src/agent/peer-watch';
import { endChildren, startPeerAgent } from './peer-agent';

const log = pino({ level: 'silent' });
const me = { jobId: 'job1', round: 3, nodeId: 'watcher' };

const children: ChildProcess[] = [];
const watchers: Watching[] = [];
const agents: PeerWatch[] = [];
afterEach(async () => {
  for (const w of watchers.splice(0)) w.close();
  for (const a of agents.splice(0)) await a.close();
  await endChildren(children);
});

async function peerAgent() {
  return startPeerAgent(children);
}

function watcher(port: number): Watching {
  const a = createPeerWatch({ bindAddress: '127.0.0.1', nodeId: 'watcher', log });
  agents.push(a);
  const w = a.watch(me, { nodeId: 'peer', addr: '127.0.0.1', port });
  watchers.push(w);
  return w;
}

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> => Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Long enough for the hello to reach the peer (the kernel accepts before the process reads). */
const SETTLE_MS = 300;

test('a peer agent killed with SIGKILL: the watcher sees its connection close within a bound', async () => {
  const peer = await peerAgent();
  const w = watcher(peer.port);
  await sleep(SETTLE_MS);
  const t0 = Date.now();
  peer.proc.kill('SIGKILL');
  const lost = await within(w.lost, 2_000);
  const ms = Date.now() - t0;
  console.log(`peer watch: SIGKILL of the peer agent seen in ${ms} ms`);
  expect(lost).not.toBe('timeout');
  expect((lost as PeerLost).peer).toBe('peer');
  expect(ms).toBeLessThan(2_000);
});

test('a peer agent frozen with SIGSTOP: its connection stays open, nothing is reported', async () => {
  const peer = await peerAgent();
  const w = watcher(peer.port);
  await sleep(SETTLE_MS);
  peer.proc.kill('SIGSTOP');
  expect(await within(w.lost, 2_000)).toBe('timeout');
  // Woken, it is as alive as before; killed then, it is noticed.
  peer.proc.kill('SIGCONT');
  await sleep(SETTLE_MS);
  peer.proc.kill('SIGKILL');
  expect(await within(w.lost, 2_000)).toMatchObject({ peer: 'peer' });
});

test('a peer that ends the round normally, then exits, is blamed for nothing', async () => {
  const peer = await peerAgent();
  const w = watcher(peer.port);
  await sleep(SETTLE_MS);
  peer.endRound(me.jobId, me.round);
  peer.proc.stdin!.write('exit\n');
  const code = await new Promise((r) => peer.proc.once('exit', r));
  expect(code).toBe(0);
  expect(await within(w.lost, 1_000)).toBe('timeout');
});

test('a watcher that comes after the peer ended its round hears bye, not a loss', async () => {
  const peer = await peerAgent();
  peer.endRound(me.jobId, me.round);
  await sleep(SETTLE_MS);
  const w = watcher(peer.port);
  await sleep(SETTLE_MS);
  expect(await within(w.lost, 1_000)).toBe('timeout');
  // The peer is still alive, so a later round's watch of it would still see a kill.
});

test('a connection never answered by a peer agent blames no one (refused; a process that is not one)', async () => {
  const peer = await peerAgent();
  peer.proc.kill('SIGKILL');
  await new Promise((r) => peer.proc.once('exit', r));
  expect(await within(watcher(peer.port).lost, 1_000)).toBe('timeout');
  // Something else on the port: it takes the hello and hangs up.
  const net = require('node:net') as typeof import('node:net');
  const other = net.createServer((s) => s.once('data', () => s.destroy()));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
  try {
    const w = watcher((other.address() as import('node:net').AddressInfo).port);
    expect(await within(w.lost, 1_000)).toBe('timeout');
  } finally {
    await new Promise((r) => other.close(r));
  }
});

test('a watcher whose own round ends closes without blame; the peer is not told of a loss either', async () => {
  const peer = await peerAgent();
  const w = watcher(peer.port);
  await sleep(SETTLE_MS);
  w.close();
  peer.proc.kill('SIGKILL');
  expect(await within(w.lost, 1_000)).toBe('timeout');
});

test('a round forming stops the watchers of earlier rounds without blame (in one process, two agents)', async () => {
  const b = createPeerWatch({ bindAddress: '127.0.0.1', nodeId: 'b', log });
  agents.push(b);
  const a = createPeerWatch({ bindAddress: '127.0.0.1', nodeId: 'a', log });
  agents.push(a);
  const port = await b.port();
  const w = a.watch({ jobId: 'job1', round: 3, nodeId: 'a' }, { nodeId: 'b', addr: '127.0.0.1', port });
  watchers.push(w);
  await sleep(SETTLE_MS);
  b.roundForming('job1', 4);
  expect(await within(w.lost, 1_000)).toBe('timeout');
  // A hello that is not one is dropped; the listener keeps serving.
  const junk = await new Promise<string>((resolve) => {
    const s = require('node:net').connect({ host: '127.0.0.1', port }, () => s.write('nonsense\n'));
    s.on('close', () => resolve('closed'));
  });
  expect(junk).toBe('closed');
  const w2 = a.watch({ jobId: 'job1', round: 4, nodeId: 'a' }, { nodeId: 'b', addr: '127.0.0.1', port });
  watchers.push(w2);
  await sleep(SETTLE_MS);
  b.endAll();
  expect(await within(w2.lost, 1_000)).toBe('timeout');
});
