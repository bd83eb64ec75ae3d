/**
 * The node activities' peer watch: `prepare` gives the agent's watch port, and `runWorkers` of an
 * assignment with `watch` ends with `peerLost` (and stops its workers) once the watched agent, a
 * real process here (test/agent/fixtures/peer-agent.js), is killed; a peer that ends its round
 * normally changes nothing. The workers are a stand-in group (as in node.test.ts).
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createNodeActivities, PEER_REPORT_GRACE_MS } from '../../activities/node';
import type { GroupResult, WorkerGroup } from '../../src/agent/workers/types';
import type { RoundAssignment } from '../../src/job/assignment';
import type { PrepareResult } from '../../activities/types';
import { endChildren, startPeerAgent } from '../agent/peer-agent';

const runDir = mkdtempSync(path.join(os.tmpdir(), 'telastic-node-peer-test-'));
const children: ChildProcess[] = [];
const nodes: ReturnType<typeof createNodeActivities>[] = [];
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.stopAll('test over');
  await endChildren(children);
});
afterAll(() => rmSync(runDir, { recursive: true, force: true }));

function group() {
  const stops: string[] = [];
  let end: (r: GroupResult) => void = () => undefined;
  let started = 0;
  const startGroup = (): WorkerGroup => {
    started++;
    const done = new Promise<GroupResult>((resolve) => (end = resolve));
    return { pids: [], wait: () => done, stop: async (reason?: string) => void (stops.push(reason ?? ''), end({ state: 'stopped', reason: reason ?? null, exits: [] })) };
  };
  return { startGroup, stops, started: () => started, end: (r: GroupResult) => end(r) };
}

function node(g: ReturnType<typeof group>) {
  const n = createNodeActivities({
    nodeId: 'n1', entrypoint: { script: 'train.py', args: [], module: false, noPython: false }, bindAddress: '127.0.0.1',
    output: { redirects: 0, tee: 0 }, shutdownTimeoutMs: 1000, baseEnv: { PATH: '/usr/bin' }, runDir, log: pino({ level: 'silent' }), startGroup: g.startGroup,
  });
  nodes.push(n);
  return n;
}

const assignment = (port: number): RoundAssignment => ({
  jobId: 'job1', round: 2, nodeId: 'n1', role: 'default', groupRank: 0, groupWorldSize: 2, rankOffset: 0,
  localWorldSize: 2, worldSize: 4, masterAddr: '127.0.0.1', masterPort: 29500, restartCount: 0, maxRestarts: 3,
  heartbeatIntervalMs: 100, watch: { nodeId: 'n2', addr: '127.0.0.1', port },
});
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('prepare gives the agent\'s watch port, the same every round', async () => {
  const n = node(group());
  const env = new MockActivityEnvironment();
  const a = (await env.run(n.activities.prepare, { jobId: 'job1', round: 1, nodeId: 'n1' })) as PrepareResult;
  const b = (await env.run(n.activities.prepare, { jobId: 'job1', round: 2, nodeId: 'n1' })) as PrepareResult;
  expect(a.watchPort).toEqual(expect.any(Number));
  expect(b.watchPort).toBe(a.watchPort);
});

test('the watched agent killed with SIGKILL: runWorkers ends with peerLost naming it and stops the workers here', async () => {
  const peer = await startPeerAgent(children);
  const g = group();
  const result = new MockActivityEnvironment().run(node(g).activities.runWorkers, assignment(peer.port));
  await tick(300);
  expect(g.started()).toBe(1);
  const t0 = Date.now();
  peer.proc.kill('SIGKILL');
  await expect(result).resolves.toEqual({ state: 'peerLost', peer: 'n2', message: "peer watch: peer n2's agent connection closed, seen by n1" });
  console.log(`runWorkers ended with peerLost ${Date.now() - t0} ms after the SIGKILL`);
  expect(g.stops).toEqual(['peer n2 lost']);
});

test('a worker failing as the watched agent dies: the watch\'s evidence is what is reported', async () => {
  const peer = await startPeerAgent(children);
  const g = group();
  const result = new MockActivityEnvironment().run(node(g).activities.runWorkers, assignment(peer.port));
  await tick(300);
  // The broken collective here is seen first; the peer's close comes within the grace.
  g.end({ state: 'failed', failure: { localRank: 0, rank: 0, pid: 1, exitCode: 1, signal: null, message: 'Connection reset by peer', timestamp: 0 }, exits: [] } as GroupResult);
  peer.proc.kill('SIGKILL');
  await expect(result).resolves.toMatchObject({ state: 'peerLost', peer: 'n2' });
});

test('a peer that ends its round normally: the worker failure here is reported as it is, after the grace', async () => {
  const peer = await startPeerAgent(children);
  const g = group();
  const result = new MockActivityEnvironment().run(node(g).activities.runWorkers, assignment(peer.port));
  await tick(300);
  peer.endRound('job1', 2);
  await tick(300);
  const t0 = Date.now();
  g.end({ state: 'failed', failure: { localRank: 1, rank: 1, pid: 1, exitCode: 3, signal: null, message: 'boom', timestamp: 0 }, exits: [] } as GroupResult);
  await expect(result).resolves.toMatchObject({ state: 'failed', failure: { rank: 1, exitCode: 3 } });
  expect(Date.now() - t0).toBeGreaterThanOrEqual(PEER_REPORT_GRACE_MS - 20);
  peer.proc.kill('SIGKILL'); // after the round: blames no one
  await tick(200);
  expect(g.stops).toEqual([]);
});
