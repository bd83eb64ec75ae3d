/**
 * Scale with simulated nodes (issue 6, Deliver 4b), printed, not asserted. Against ONE headless
 * dev server started here, with one `telastic controller` (a real process), N simulated nodes
 * spread over --hosts processes (bench/sim-host.ts): each node a Worker on its own queue serving
 * the real node activities with stand-in worker groups, joining through the lobbies as agents do.
 *   last join → all running      every node's runWorkers started, in one round of N
 *   one node lost → all running  its heartbeats stop and its Worker stops polling (a kill -9, as
 *                                Temporal sees it) → the other N-1 running in a later round
 *   dropped node returns         a live node frozen past the heartbeat timeout is dropped, nudged,
 *                                asks, rejoins: drop → running again (bound 2 × the round's heartbeat timeout)
 *   heartbeats                   counted per execution at the nodes, and at the server
 *   histories                    events per round per execution, signals per lobby, peak pending
 *                                activities per execution (from the events; and described live)
 *   limits                       server log lines and RESOURCE_EXHAUSTED counts
 *   resources                    CPU, RSS and open fds of the server, the controller, the hosts
 * Every wait is bounded (--timeout); everything started here is killed at the end, also on failure.
 * Usage: node lib/bench/scale-sim.js [--nodes 16] [--hosts 1] [--group-size 64] [--pollers N]
 *   [--nodes-per-connection 64] [--join-width 32] [--no-poll] [--old-heartbeat] [--form-only] [--window 20] [--timeout 300] [--sim-nice 0]
 *   [--dc KEY=VALUE]…   (--old-heartbeat: nodes heartbeat every 1 s as before groups, for the "before" figure)
 */
import { Client, Connection } from '@temporalio/client';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getJobStatus, nodeState } from '../src/client/api';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { NODE_POLLERS } from '../src/temporal/workers';
import { agentPollMs, groupWorkflowId, heartbeatIntervalMs, lobbyCount, newcomerPrepareTimeoutMs, runHeartbeatTimeoutMs } from '../src/job/groups';
import { rdzvTimingSchema } from '../src/job/spec';
import { BIN, median, waitFor } from './agents';
import { executionCosts, jobEventsPerRound } from './history';
import { cpuWindow, fdCount, machineCpu, memAvailableMb, rssKb } from './proc';
import { cliWithMetrics, nonZero, scrape, sumOf } from './server-metrics';
import type { FromHost, HostInit, ToHost } from './sim-protocol';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const N = Number(opt('--nodes', '16'));
const HOSTS = Math.min(N, Number(opt('--hosts', '1')));
const GROUP = Number(opt('--group-size', '64'));
const POLLERS = argv.includes('--pollers') ? Number(opt('--pollers', '0')) : undefined;
const PER_CONN = Number(opt('--nodes-per-connection', '64'));
const WINDOW_S = Number(opt('--window', '20'));
const TIMEOUT_MS = Number(opt('--timeout', '300')) * 1000;
const OLD_HEARTBEAT = argv.includes('--old-heartbeat');
/** Stop after the formation and the running round's figures: no node lost, none dropped (repeated runs of the formation). */
const FORM_ONLY = argv.includes('--form-only');
/** prepare_timeout in seconds (the product default is 5): how long a node may take to pick up `prepare`. */
const PREPARE_S = Number(opt('--prepare-timeout', '5'));
/**
 * Niceness of the simulated nodes' processes (default 0: as equals with the server and the
 * controller). With 10 they took only the CPU those left, and at 1,024 nodes some did not run
 * the `prepare` they were given for 10 s (dropped: no heartbeat): starving the nodes is no
 * better a stand-in for machines of their own than sharing with them.
 */
const SIM_NICE = Number(opt('--sim-nice', '0'));
const DC = argv.flatMap((a, i) => (a === '--dc' ? [argv[i + 1]] : []));
const HEARTBEAT_TIMEOUT_MS = rdzvTimingSchema.parse({}).heartbeatTimeoutMs;
/** The heartbeat timeout the job gives runWorkers in a round of N (src/job/groups.ts): heartbeat_timeout up to 1,000 nodes. */
const RUN_HEARTBEAT_TIMEOUT_MS = runHeartbeatTimeoutMs(HEARTBEAT_TIMEOUT_MS, N);
/**
 * Concurrent long polls the frontend must hold (docs/production.md, Sizing): every node Worker's
 * activity polls, plus the controller's and the system's. Past `frontend.namespaceCount` (1,200
 * per frontend per API by default) the server refuses polls (ConcurrentLimit) and prepares go
 * unanswered: the run sets what an operator must set, and prints it, unless --dc sets it.
 */
const POLLS_NEEDED = N * (POLLERS ?? NODE_POLLERS) + 100;
const NAMESPACE_COUNT = Math.ceil(POLLS_NEEDED / 100) * 100;
const OPERATOR_DC = POLLS_NEEDED > 1200 && !DC.some((kv) => kv.startsWith('frontend.namespaceCount=')) ? [`frontend.namespaceCount=${NAMESPACE_COUNT}`] : [];
/**
 * The bounds this benchmark holds a run to, from the product's own timeouts (printed with each
 * figure): a first formation within two prepares of N newcomers (one may drop slow nodes, which
 * rejoin); one node lost → the rest running again within the round's heartbeat timeout (noticing
 * it) plus one such prepare; a dropped live node back within 2 × that timeout (issue 21).
 */
const NEWCOMER_PREPARE_MS = newcomerPrepareTimeoutMs(PREPARE_S * 1000, N);
const BOUNDS = { formMs: 2 * NEWCOMER_PREPARE_MS, recoverMs: RUN_HEARTBEAT_TIMEOUT_MS + NEWCOMER_PREPARE_MS, returnMs: 2 * RUN_HEARTBEAT_TIMEOUT_MS };
const LIMIT_RE = /limit|exceed|exhausted|too many|buffered events|force.?fail/i;

const report: string[] = [];
const say = (line: string) => {
  report.push(line);
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
};
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const within = (ms: number, bound: number) => `${secs(ms)}; bound ${secs(bound)}: ${ms <= bound ? 'met' : 'NOT met'}`;
const mib = (kb: number) => `${Math.round(kb / 1024)} MiB`;

let server: DevServer | undefined;
let controller: ChildProcess | undefined;
const hosts: { proc: ChildProcess; nodeIds: string[]; last: Partial<Record<FromHost['t'], FromHost>> }[] = [];
const serverLimitLines: string[] = [];
const metrics = { port: 0, start: '', startAt: 0 };
const running = new Map<number, Map<string, number>>(); // round → node → when it started running
const rejoinedAt = new Map<string, number>(); // node → when it last learned it was dropped and joined again
const peaks = { machineCpu: 0, serverRss: 0, serverFds: 0, hostsRss: 0, hostsFds: 0, controllerRss: 0, memAvailableMin: Infinity };

function post(h: (typeof hosts)[number], m: ToHost) {
  h.proc.send(m);
}

/** The next message of type `t` from every host (bounded). */
function fromAll<T extends FromHost['t']>(t: T, timeoutMs = TIMEOUT_MS): Promise<Extract<FromHost, { t: T }>[]> {
  return Promise.all(hosts.map((h) => new Promise<Extract<FromHost, { t: T }>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host ${h.proc.pid}: no '${t}' within ${secs(timeoutMs)}`)), timeoutMs);
    const on = (m: FromHost) => {
      if (m.t !== t) return;
      clearTimeout(timer);
      h.proc.off('message', on);
      resolve(m as Extract<FromHost, { t: T }>);
    };
    h.proc.on('message', on);
  })));
}

/**
 * The first round after `after` in which at least `need` of `ids` run (all by default), with when
 * the last of them started. A job of N-1:N nodes may form its round with N-1 of them.
 */
function roundWithAll(ids: string[], after = 0, need = ids.length): { round: number; at: number; count: number } | null {
  for (const [round, nodes] of [...running].sort((a, b) => a[0] - b[0])) {
    const here = ids.filter((id) => nodes.has(id));
    if (round > after && here.length >= need) return { round, at: Math.max(...here.map((id) => nodes.get(id)!)), count: here.length };
  }
  return null;
}

function sampleResources(): void {
  const m = machineCpu();
  setTimeout(() => {
    const m2 = machineCpu();
    peaks.machineCpu = Math.max(peaks.machineCpu, Math.round(((m2.busy - m.busy) / (m2.total - m.total)) * 100));
  }, 1000).unref();
  if (server) {
    peaks.serverRss = Math.max(peaks.serverRss, rssKb(server.pid) ?? 0);
    peaks.serverFds = Math.max(peaks.serverFds, fdCount(server.pid) ?? 0);
  }
  peaks.hostsRss = Math.max(peaks.hostsRss, hosts.reduce((a, h) => a + (rssKb(h.proc.pid!) ?? 0), 0));
  peaks.hostsFds = Math.max(peaks.hostsFds, hosts.reduce((a, h) => a + (fdCount(h.proc.pid!) ?? 0), 0));
  peaks.controllerRss = Math.max(peaks.controllerRss, controller?.pid ? rssKb(controller.pid) ?? 0 : 0);
  peaks.memAvailableMin = Math.min(peaks.memAvailableMin, memAvailableMb());
}

async function main(): Promise<void> {
  say(`scale-sim: ${N} simulated nodes in ${HOSTS} process(es), group_size ${GROUP}, prepare_timeout ${PREPARE_S} s${OLD_HEARTBEAT ? ' (heartbeats every 1 s, as before)' : ''}, pollers ${POLLERS ?? `${NODE_POLLERS} (the product's)`}, ${PER_CONN} nodes per connection, sim processes at nice ${SIM_NICE}, ${os.cpus().length} cores, node ${process.version}${DC.length ? `, server ${DC.join(' ')}` : ''}`);
  if (OPERATOR_DC.length) say(`server setting this run needs, and an operator must set for ${N} nodes on one frontend: ${OPERATOR_DC.join(' ')} (default 1,200: ${N} nodes × ${POLLERS ?? NODE_POLLERS} activity polls + 100 for controllers)`);
  const { cli, metricsPort } = await cliWithMetrics([...DC, ...OPERATOR_DC]);
  metrics.port = metricsPort;
  server = await startDevServer({ headless: true, port: 0, cli, onLog: (l) => LIMIT_RE.test(l) && serverLimitLines.push(l) });
  controller = spawn(process.execPath, [BIN, 'controller', '--address', server.address], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TELASTIC_LOG_LEVEL: 'warn' } });
  let controllerLog = '';
  controller.stderr?.on('data', (d: Buffer) => (controllerLog = (controllerLog + d.toString()).slice(-4000)));
  const sampler = setInterval(sampleResources, 2000);

  const jobId = `sim-${N}-${Date.now()}`;
  const ids = Array.from({ length: N }, (_, i) => `${jobId}-${String(i).padStart(5, '0')}`);
  const spec: HostInit['spec'] = {
    // N-2: the lost node and the live one dropped after it both leave the job above its minimum,
    // so each costs a re-formation of known members, not a wait for joins (last call).
    jobId, minNodes: Math.max(1, N - 2), maxNodes: N, nprocPerNode: 1, maxRestarts: 3,
    entrypoint: { script: 'sim', args: [] }, rdzv: { groupSize: GROUP, lastCallTimeoutMs: 30_000, prepareTimeoutMs: PREPARE_S * 1000 },
    checkpointDir: mkdtempSync(path.join(os.tmpdir(), 'telastic-sim-ckpt-')),
  };
  for (let i = 0; i < HOSTS; i++) {
    const nodeIds = ids.filter((_, j) => j % HOSTS === i);
    const proc = fork(path.join(__dirname, 'sim-host.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    if (SIM_NICE) os.setPriority(proc.pid!, SIM_NICE);
    const h = { proc, nodeIds, last: {} as (typeof hosts)[number]['last'] };
    proc.on('message', (m: FromHost) => {
      h.last[m.t] = m;
      if (m.t === 'running') for (const r of m.items) {
        if (!running.has(r.round)) running.set(r.round, new Map());
        running.get(r.round)!.set(r.nodeId, r.at);
      }
      if (m.t === 'error') say(`host ${proc.pid} error: ${m.message}`);
      if (m.t === 'rejoined') rejoinedAt.set(m.nodeId, m.at);
    });
    hosts.push(h);
  }
  const joinWidth = Number(opt('--join-width', '32'));
  hosts.forEach((h) => post(h, { t: 'init', address: server!.address, nodeIds: h.nodeIds, spec, pollers: POLLERS, nodesPerConnection: PER_CONN, joinWidth, poll: !argv.includes('--no-poll'), oldHeartbeat: OLD_HEARTBEAT }));
  const ready = await fromAll('ready');
  say(`node Workers created: ${ready.map((r) => secs(r.createMs)).join(', ')} per process (${(Math.max(...ready.map((r) => r.createMs)) / (N / HOSTS)).toFixed(1)} ms per Worker); RSS ${ready.map((r) => mib(r.rssKb)).join(', ')} (${Math.round(ready.reduce((a, r) => a + r.rssKb, 0) / N)} KiB per node)`);

  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const m0 = (metrics.start = await scrape(metricsPort));
  metrics.startAt = Date.now();
  const joinCpu = cpuWindow({ server: [server.pid], controller: [controller.pid!], hosts: hosts.map((h) => h.proc.pid!) });
  hosts.forEach((h) => post(h, { t: 'join' }));
  const joined = await fromAll('joined');
  const firstJoin = Math.min(...joined.map((j) => j.firstAt));
  const lastJoin = Math.max(...joined.map((j) => j.lastAt));
  const joinErrors = joined.reduce((a, j) => a + j.errors, 0);
  say(`joins sent: first → last ${secs(lastJoin - firstJoin)}${joinErrors ? `, ${joinErrors} failed` : ''}`);
  // As before the job's minimum was N-2: all but one may form the first round.
  const need = Math.max(1, N - 1);
  const all = await waitFor(`${need}+ of ${N} nodes running in one round`, () => roundWithAll(ids, 0, need), TIMEOUT_MS, 100);
  await new Promise((r) => setTimeout(r, 1000)); // the last of a round of N may start a moment after N-1
  Object.assign(all, roundWithAll(ids, all.round - 1, need));
  const jc = joinCpu();
  say(`last join → all ${all.count} running (round ${all.round}, ${all.count} of ${N} nodes): ${within(all.at - lastJoin, BOUNDS.formMs)} (first join → all running ${secs(all.at - firstJoin)}); CPU meanwhile (% of one core): server ${jc.perGroup.server}, controller ${jc.perGroup.controller}, sim processes ${jc.perGroup.hosts}; machine ${jc.machine} % of ${os.cpus().length} cores`);

  await new Promise((r) => setTimeout(r, 5000)); // let the round settle before measuring it
  const described = await Promise.all(Array.from({ length: Math.ceil(N / GROUP) }, (_, i) => client.workflow.getHandle(groupWorkflowId(jobId, all.round, 'run', i)).describe().then((d) => d.raw.pendingActivities?.length ?? 0, () => -1)));
  const jobPending = await client.workflow.getHandle(jobId).describe().then((d) => d.raw.pendingActivities?.length ?? 0);
  say(`pending activities (described while running): run groups ${described.join(' ')}; job workflow ${jobPending}`);
  const jobDesc = await client.workflow.getHandle(jobId).describe();
  const status = JSON.stringify(await getJobStatus({ connection }, jobId));
  say(`job workflow while running: history ${jobDesc.historyLength} events, ${Math.round(Number(jobDesc.historySize ?? 0) / 1024)} KiB; status query result ${Math.round(status.length / 1024)} KiB (${Math.round(status.length / N)} B per node; payload limit 2 MiB)`);

  // Rates are over the time that passed between two snapshots, not WINDOW_S: a scrape of a busy
  // server's 300,000 metric lines, or a busy node process's reply, takes seconds of its own.
  const beatsAt = async () => {
    const t0 = Date.now();
    const text = await scrape(metricsPort);
    return { at: (t0 + Date.now()) / 2, n: sumOf(text, 'service_requests', 'operation="RecordActivityTaskHeartbeat"', 'service_name="frontend"', 'namespace="default"'), text };
  };
  hosts.forEach((h) => post(h, { t: 'stats' }));
  const s0 = await fromAll('stats');
  const hb0 = await beatsAt();
  const steady = cpuWindow({ server: [server.pid], controller: [controller.pid!], hosts: hosts.map((h) => h.proc.pid!) });
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  hosts.forEach((h) => post(h, { t: 'stats' }));
  const s1 = await fromAll('stats');
  const hb1 = await beatsAt();
  const m1 = hb1.text;
  const nodeWindowS = Math.max(...s1.map((s, i) => s.at - s0[i].at)) / 1000;
  const serverWindowS = (hb1.at - hb0.at) / 1000;
  const polls = (op: string) => sumOf(m1, 'service_pending_requests', `operation="${op}"`, 'service_name="frontend"', 'namespace="default"');
  if (argv.includes('--debug-polls')) say(nonZero(m1, 'service_pending_requests').join(' | '));
  say(`long polls held at the frontend: PollActivityTaskQueue ${polls('PollActivityTaskQueue')}, PollWorkflowTaskQueue ${polls('PollWorkflowTaskQueue')} (frontend.namespaceCount: 1,200 per API by default)`);
  const sc = steady();
  const asked = s1.reduce((a, s) => a + s.queries, 0) - s0.reduce((a, s) => a + s.queries, 0);
  say(`node queries to the job while running (nodes ask when nudged, or once the job has had them idle for idleAskMs): ${(asked / nodeWindowS).toFixed(1)}/s over ${nodeWindowS.toFixed(1)} s (before nudges: every node every ${secs(agentPollMs(N))}, ${(N / (agentPollMs(N) / 1000)).toFixed(1)}/s)`);
  const perWf = new Map<string, number>();
  for (const s of s1) for (const [wf, n] of Object.entries(s.beats)) perWf.set(wf, (perWf.get(wf) ?? 0) + n);
  for (const s of s0) for (const [wf, n] of Object.entries(s.beats)) perWf.set(wf, (perWf.get(wf) ?? 0) - n);
  const rates = [...perWf].filter(([wf]) => wf.includes(`/round-${all.round}/run-`)).map(([, n]) => n / nodeWindowS);
  const total = rates.reduce((a, b) => a + b, 0);
  const interval = OLD_HEARTBEAT ? 1000 : heartbeatIntervalMs(RUN_HEARTBEAT_TIMEOUT_MS, GROUP);
  say(`heartbeats: counted at the nodes over ${nodeWindowS.toFixed(1)} s ${total.toFixed(1)}/s in all, per run group ${rates.map((r) => r.toFixed(1)).join(' ')}/s; at the server over ${serverWindowS.toFixed(1)} s ${((hb1.n - hb0.n) / serverWindowS).toFixed(1)}/s; per node-hour ${Math.round((total / N) * 3600)} (interval ${interval} ms${OLD_HEARTBEAT ? ', as before groups' : ''} → ${Math.round(3_600_000 / interval)} expected; 3,600 at the old 1 s)`);
  say(`server CPU while running: ${((sc.perGroup.server / 100) * 60 / N).toFixed(3)} CPU-seconds per node-minute (${sc.perGroup.server} % of one core for ${N} nodes)`);
  say(`CPU while running (% of one core): server ${sc.perGroup.server}, controller ${sc.perGroup.controller}, sim processes ${sc.perGroup.hosts}; machine ${sc.machine} %; RSS server ${mib(rssKb(server.pid) ?? 0)}, controller ${mib(rssKb(controller.pid!) ?? 0)}, sim processes ${s1.map((s) => mib(s.rssKb)).join(', ')}`);

  if (FORM_ONLY) {
    say(`nodes whose runWorkers started, per round (as the nodes saw it): ${[...running].sort((x, y) => x[0] - y[0]).map(([r, nodes]) => `round ${r} ${nodes.size}`).join(', ')}`);
    await histories(client, jobId, all.round);
    await limits(metricsPort, m0);
    clearInterval(sampler);
    return;
  }
  const members = ids.filter((id) => running.get(all.round)?.has(id));
  const victim = members[Math.floor(members.length / 2)];
  const rest = members.filter((id) => id !== victim);
  const owner = hosts.find((h) => h.nodeIds.includes(victim))!;
  post(owner, { t: 'lose', nodeId: victim });
  const lost = await new Promise<number>((resolve) => owner.proc.on('message', (m: FromHost) => m.t === 'lost' && resolve(m.at)));
  const again = await waitFor(`the other ${rest.length} running again`, () => roundWithAll(rest, all.round), TIMEOUT_MS, 100);
  say(`one node lost (${victim}: heartbeats stopped, Worker stopped polling) → the other ${rest.length} running (round ${again.round}): ${within(again.at - lost, BOUNDS.recoverMs)}`);

  await droppedReturns(connection, jobId, rest, again.round);

  hosts.forEach((h) => post(h, { t: 'finish' }));
  const result = await Promise.race([client.workflow.getHandle(jobId).result().then((r) => `succeeded after ${r.rounds} round(s), ${r.restarts} restart(s)`, (e: unknown) => `ended: ${String(e)}`), new Promise<string>((r) => setTimeout(() => r('did not end within 120 s of finish'), 120_000))]);
  say(`job ${result}`);
  await histories(client, jobId, all.round);
  await limits(metricsPort, m0);
  clearInterval(sampler);
  say(`peaks: machine CPU ${peaks.machineCpu} %, MemAvailable min ${peaks.memAvailableMin} MiB; server RSS ${mib(peaks.serverRss)}, fds ${peaks.serverFds}; sim processes RSS ${mib(peaks.hostsRss)}, fds ${peaks.hostsFds}; controller RSS ${mib(peaks.controllerRss)}`);
  const worrying = controllerLog.split('\n').filter((l) => /error|warn/i.test(l) && !/not polling for/.test(l));
  if (worrying.length) say(`controller log: ${worrying.length} warning/error line(s), last: ${worrying[worrying.length - 1].slice(0, 400)}`);
}

/**
 * A live node the job drops: frozen (no heartbeats, no answer) after its first heartbeat of the
 * round for the round's heartbeat timeout + 2 s, as a SIGSTOP then SIGCONT would, then alive. The job nudges it as it drops it
 * (workflows/nudge.ts); the node asks, learns it was dropped and joins again. Timed from the drop
 * (the job's status says `lost`) to the node running in a later round; the bound is 2 × that timeout.
 */
async function droppedReturns(connection: Connection, jobId: string, members: string[], round: number): Promise<void> {
  const dropped = members[Math.floor(members.length / 3)];
  const owner = hosts.find((h) => h.nodeIds.includes(dropped))!;
  const pauseMs = RUN_HEARTBEAT_TIMEOUT_MS + 2000;
  // Frozen after its first heartbeat of the round: a runWorkers that goes quiet before any is
  // given to the node again (workflows/group.ts unheard), and a node back by then is kept.
  const firstBeatAt = (running.get(round)?.get(dropped) ?? Date.now()) + heartbeatIntervalMs(runHeartbeatTimeoutMs(HEARTBEAT_TIMEOUT_MS, members.length), GROUP) + 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, firstBeatAt - Date.now())));
  rejoinedAt.delete(dropped);
  post(owner, { t: 'pause', nodeId: dropped, ms: pauseMs });
  // Seen by asking the job (a busy job refuses some queries), or, if the node hears first, when it
  // was told and joined again: a few milliseconds after the drop, so never an earlier drop time.
  const seen = { by: 'the job\'s node query' };
  const droppedAt = await waitFor(`the job to drop ${dropped}`, async () => {
    const told = rejoinedAt.get(dropped);
    if (told !== undefined) {
      seen.by = 'the node told of its drop';
      return told;
    }
    return nodeState({ connection }, jobId, dropped).then((v) => (v.node === 'lost' ? Date.now() : null), () => null);
  }, TIMEOUT_MS, 250);
  const back = await waitFor(`${dropped} running again`, () => roundWithAll([dropped], round), TIMEOUT_MS, 100);
  const took = back.at - droppedAt;
  say(`one live node dropped (${dropped}: frozen ${secs(pauseMs)}) → running again (round ${back.round}) after the job dropped it: ${within(took, BOUNDS.returnMs)} (2 × the round's heartbeat timeout, ${secs(RUN_HEARTBEAT_TIMEOUT_MS)}; drop seen by ${seen.by})`);
}

async function histories(client: Client, jobId: string, firstRound: number): Promise<void> {
  await new Promise((r) => setTimeout(r, 3000)); // visibility is eventually consistent
  const costs = await executionCosts(client, jobId);
  const perRound = await jobEventsPerRound(client, jobId);
  const byType = (t: string) => costs.filter((c) => c.type === t);
  const stat = (xs: number[]) => (xs.length ? `median ${median(xs)}, max ${Math.max(...xs)}` : '-');
  say(`executions: ${costs.length} (job runs ${byType('elasticJob').length}, lobby runs ${byType('jobLobby').length} of ${lobbyCount(N, GROUP)} lobbies, prepare groups ${byType('prepareGroup').length}, run groups ${byType('runGroup').length})`);
  say(`job workflow events per round: ${[...perRound].sort((a, b) => a[0] - b[0]).map(([r, n]) => `${r === 0 ? 'joins' : `round ${r}`} ${n}`).join(', ')} (total ${[...perRound.values()].reduce((a, b) => a + b, 0)}); signals to the job ${byType('elasticJob').reduce((a, c) => a + c.signals, 0)}; peak pending activities ${Math.max(...byType('elasticJob').map((c) => c.peakPendingActivities))}`);
  for (const t of ['prepareGroup', 'runGroup'] as const) {
    const first = byType(t).filter((c) => c.workflowId.includes(`/round-${firstRound}/`));
    say(`${t} (one round each): events ${stat(byType(t).map((c) => c.events))}; peak pending activities ${stat(byType(t).map((c) => c.peakPendingActivities))}; round ${firstRound}: ${first.map((c) => c.events).join(' ')} events; heartbeat/other activity timeouts ${byType(t).reduce((a, c) => a + c.activityTimeouts, 0)}`);
  }
  const tasks = (t: string) => `${byType(t).reduce((a, c) => a + c.taskFailures, 0)}/${byType(t).reduce((a, c) => a + c.taskTimeouts, 0)}`;
  say(`workflow tasks failed/timed out: job ${tasks('elasticJob')}, prepare groups ${tasks('prepareGroup')}, run groups ${tasks('runGroup')}, lobbies ${tasks('jobLobby')}`);
  say(`lobbies: signals per lobby run ${stat(byType('jobLobby').map((c) => c.signals))}; events ${stat(byType('jobLobby').map((c) => c.events))}`);
}

async function limits(metricsPort: number, m0: string): Promise<void> {
  const m1 = await scrape(metricsPort);
  const fe = 'service_name="frontend"';
  const exhausted = sumOf(m1, 'service_errors_resource_exhausted', fe) - sumOf(m0, 'service_errors_resource_exhausted', fe);
  const detail = nonZero(m1, 'service_errors_resource_exhausted').filter((l) => l.includes(fe)).map((l) => l.replace(/.*operation="([^"]+)".*resource_exhausted_cause="([^"]+)".*\s(\d+)$/, '$1 $2 $3')).slice(0, 5);
  const queries = sumOf(m1, 'service_requests', 'operation="QueryWorkflow"', fe) - sumOf(m0, 'service_requests', 'operation="QueryWorkflow"', fe);
  const runS = (Date.now() - metrics.startAt) / 1000;
  say(`queries to the job execution in the whole run (the benchmark's own included): ${queries} in ${runS.toFixed(0)} s, ${(queries / runS).toFixed(1)}/s; group and lobby executions get none`);
  say(`server RESOURCE_EXHAUSTED (frontend): ${exhausted}${detail.length ? ` (${detail.join('; ')})` : ''}`);
  say(serverLimitLines.length ? `server log lines about limits: ${serverLimitLines.length}; first: ${serverLimitLines[0].slice(0, 400)}` : 'server log: no limit or exhaustion lines');
  hosts.forEach((h) => post(h, { t: 'stats' }));
  const warnings = new Map<string, number>();
  for (const s of await fromAll('stats', 30_000)) for (const [k, n] of Object.entries(s.warnings)) warnings.set(k, (warnings.get(k) ?? 0) + n);
  const top = [...warnings].sort((a, b) => b[1] - a[1]).slice(0, 4);
  say(top.length ? `SDK warnings in the sim processes: ${top.map(([k, n]) => `${n}× ${k}`).join(' | ')}` : 'SDK warnings in the sim processes: none');
}

async function cleanUp(): Promise<void> {
  for (const h of hosts) h.proc.kill('SIGKILL');
  controller?.kill('SIGKILL');
  await server?.stop();
}

main().then(async () => {
  await cleanUp();
  console.log(report.join('\n'));
  process.exit(0);
}, async (err: unknown) => {
  say(`stopped: ${err instanceof Error ? err.message : String(err)}`);
  sampleResources();
  say(`at the stop: machine MemAvailable ${memAvailableMb()} MiB; server RSS ${mib(peaks.serverRss)}, fds ${peaks.serverFds}; sim processes RSS ${mib(peaks.hostsRss)}, fds ${peaks.hostsFds}; peak machine CPU ${peaks.machineCpu} %`);
  for (const [round, nodes] of running) say(`round ${round}: ${nodes.size} node(s) running`);
  if (metrics.start) await limits(metrics.port, metrics.start).catch((e: unknown) => say(`limits: ${String(e)}`));
  else say(serverLimitLines.length ? `server log lines about limits: ${serverLimitLines.length}; first: ${serverLimitLines[0].slice(0, 400)}` : 'server log: no limit or exhaustion lines');
  await cleanUp();
  console.log(report.join('\n'));
  process.exit(1);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanUp().then(() => process.exit(130)));
