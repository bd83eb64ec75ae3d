/**
 * One process of simulated nodes (bench/sim-node.ts), driven by bench/scale-sim.ts over IPC
 * (bench/sim-protocol.ts). Each node joins as an agent does (src/agent/job-membership.ts): `startJob`
 * (the existing job is used), then its join through the job's lobby with `sendToLobby`; then it
 * asks `nodeState` when the job nudges it, and every `idleAskMs(maxNodes)` once the job has had
 * it do nothing for as long. The process exits with its parent.
 */
import { Connection } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { nodeState, sendToLobby, startJob } from '../src/client/api';
import { agentPollMs, idleAskMs } from '../src/job/groups';
import { nextRetryMs } from '../src/agent/job-membership';
import type { JoinRequest } from '../src/job/spec';
import { rssKb } from './proc';
import { createSimNode, type SimNode } from './sim-node';
import type { FromHost, HostInit, ToHost } from './sim-protocol';

const send = (m: FromHost) => process.send?.(m);
const warnings = new Map<string, number>();
Runtime.install({
  logger: {
    log: (level: string, message: string) => level === 'WARN' || level === 'ERROR' ? warn(message) : undefined,
    trace: () => undefined, debug: () => undefined, info: () => undefined,
    warn: (m: string) => warn(m), error: (m: string) => warn(m),
  },
  telemetryOptions: { logging: { filter: { core: 'WARN', other: 'WARN' }, forward: {} } },
  shutdownSignals: [],
});

function warn(message: string): void {
  const key = message.replace(/[0-9a-f-]{36}|\d+/g, '#').slice(0, 160);
  warnings.set(key, (warnings.get(key) ?? 0) + 1);
}

const nodes = new Map<string, SimNode>();
const beats = new Map<string, number>();
let running: { nodeId: string; round: number; at: number }[] = [];
let init: HostInit;
let client: Connection;
let stopPolls = false;

async function pool<T>(items: T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function start(m: HostInit): Promise<void> {
  init = m;
  const t0 = Date.now();
  client = await Connection.connect({ address: m.address });
  const natives: NativeConnection[] = [];
  for (let i = 0; i < m.nodeIds.length; i += m.nodesPerConnection) natives.push(await NativeConnection.connect({ address: m.address }));
  await pool(m.nodeIds.map((id, i) => [id, i] as const), 16, async ([nodeId, i]) => {
    const node = await createSimNode({
      connection: natives[Math.floor(i / m.nodesPerConnection)],
      namespace: 'default',
      nodeId,
      pollers: m.pollers,
      oldHeartbeat: m.oldHeartbeat,
      onRunning: (a) => running.push({ nodeId, round: a.round, at: Date.now() }),
      onHeartbeat: (wf) => beats.set(wf, (beats.get(wf) ?? 0) + 1),
      onNudge: (fate) => {
        nudges++;
        if (fate?.node === 'lost') void rejoin(nodeId);
        else if (!fate) void askUntilAnswered(nodeId);
      },
    });
    node.running.catch((err: unknown) => warn(`worker ${nodeId} ended: ${String(err)}`));
    nodes.set(nodeId, node);
  });
  send({ t: 'ready', createMs: Date.now() - t0, rssKb: rssKb(process.pid) ?? 0 });
}

const lobbyOf = (spec: HostInit['spec']) => ({ jobId: spec.jobId, maxNodes: spec.maxNodes, groupSize: spec.rdzv?.groupSize ?? 64 });
const joinRequest = (nodeId: string): JoinRequest => ({ nodeId, address: '127.0.0.1', slots: init.spec.nprocPerNode, entrypoint: { module: false, noPython: false, ...init.spec.entrypoint }, role: 'default' });
let rejoins = 0;
let nudges = 0;
let queries = 0;

/**
 * As an agent does: ask the job about the node; one the job dropped (it did not answer in time)
 * joins again. False when the job did not answer.
 */
async function ask(id: string): Promise<boolean> {
  const opts = { connection: client, namespace: 'default' };
  queries++;
  return client
    .withDeadline(Date.now() + 5000, () => nodeState(opts, init.spec.jobId, id))
    .then(async (v) => {
      if (v.node === 'lost') await rejoin(id);
      return true;
    })
    .catch((err: unknown) => {
      warn(`nodeState: ${String(err)}`);
      return false;
    });
}

/** A node the job dropped while alive joins again. */
async function rejoin(id: string): Promise<void> {
  if (nodes.get(id)?.lost) return;
  rejoins++;
  await sendToLobby({ connection: client, namespace: 'default' }, lobbyOf(init.spec), { kind: 'join', req: joinRequest(id) }).catch((err: unknown) => warn(`rejoin: ${String(err)}`));
  send({ t: 'rejoined', nodeId: id, at: Date.now() });
}

/** A nudged node asks until the job answers, backing off as an agent does (src/agent/job-membership.ts). */
async function askUntilAnswered(id: string): Promise<void> {
  const pollMs = agentPollMs(init.spec.maxNodes);
  for (let retryMs = 0; !stopPolls && !(await ask(id)); ) {
    retryMs = nextRetryMs(retryMs, pollMs);
    await new Promise((r) => setTimeout(r, retryMs));
  }
}

async function join(): Promise<void> {
  const opts = { connection: client, namespace: 'default' };
  const spec = init.spec;
  const lobby = lobbyOf(spec);
  let errors = 0;
  let firstAt = 0;
  let lastAt = 0;
  await pool([...nodes.keys()], init.joinWidth, async (nodeId) => {
    const req = joinRequest(nodeId);
    firstAt ||= Date.now();
    try {
      await startJob(opts, spec);
      await sendToLobby(opts, lobby, { kind: 'join', req });
    } catch (err) {
      errors++;
      warn(`join failed: ${String(err)}`);
    }
    lastAt = Date.now();
  });
  send({ t: 'joined', firstAt, lastAt, errors });
  if (init.poll) void pollNodeStates(idleAskMs(spec.maxNodes));
}

/** Every node the job has not had do anything for `everyMs` asks about itself, spread evenly, as agents do. */
async function pollNodeStates(everyMs: number): Promise<void> {
  const ids = [...nodes.keys()];
  const gap = everyMs / ids.length;
  for (let i = 0; !stopPolls; i = (i + 1) % ids.length) {
    await new Promise((r) => setTimeout(r, gap));
    const node = nodes.get(ids[i]);
    if (!node || node.lost || node.idleMs() < everyMs) continue;
    void ask(ids[i]);
  }
}

process.on('message', (m: ToHost) => {
  const done = (p: Promise<void>) => p.catch((err: unknown) => send({ t: 'error', message: String(err) }));
  if (m.t === 'init') void done(start(m));
  if (m.t === 'join') void done(join());
  if (m.t === 'lose') {
    nodes.get(m.nodeId)?.lose();
    send({ t: 'lost', nodeId: m.nodeId, at: Date.now() });
  }
  if (m.t === 'pause') {
    nodes.get(m.nodeId)?.pause(m.ms);
    send({ t: 'paused', nodeId: m.nodeId, at: Date.now() });
  }
  if (m.t === 'finish') for (const n of nodes.values()) n.finish();
  if (m.t === 'stats') send({ t: 'stats', at: Date.now(), beats: Object.fromEntries(beats), rssKb: rssKb(process.pid) ?? 0, warnings: { ...Object.fromEntries(warnings), ...(rejoins ? { 'rejoined after being dropped': rejoins } : {}) }, nudges, queries });
  if (m.t === 'exit') {
    stopPolls = true;
    process.exit(0);
  }
});
setInterval(() => {
  if (running.length) send({ t: 'running', items: running });
  running = [];
}, 100).unref();
process.on('disconnect', () => process.exit(0));
