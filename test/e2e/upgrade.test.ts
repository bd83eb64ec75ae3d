/**
 * Upgrading controllers while a job runs (docs/upgrading.md). Build A is this checkout; build B
 * is a second install whose job workflow differs by one command (an upsertMemo at its start, so
 * that B replaying A's history would be a nondeterminism error). A job runs a long round under
 * A's controller; B's controller starts, B is made current and the job woken, as the docs say;
 * the job moves to B with its round (the agents adopt their live workers), A's controller is
 * stopped once nothing is pinned to A, and the job ends with no restart, in the same round, with
 * no failed workflow task. A job started after the upgrade runs on B.
 */
import { execFile } from 'node:child_process';
import { cpSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { resolveTemporalCli } from '../../src/temporal/binary';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, ROOT, WORKER, e2eSuite, finish, recordedPids, startAgent, startTelastic, status, tmpDir, uniqueJobId, waitFor, waitForRound, alive, type Agent } from './harness';

const run = promisify(execFile);
const e2e = e2eSuite();

/** A second telastic install (bin, lib, package.json) whose workflow bundle is built from edited sources. */
async function installB(): Promise<{ dir: string; code: string }> {
  const dir = tmpDir('upgrade-b');
  for (const f of ['bin', 'lib', 'package.json']) cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  const src = path.join(dir, 'sources');
  for (const f of ['workflows', 'src', 'activities']) cpSync(path.join(ROOT, f), path.join(src, f), { recursive: true });
  const job = path.join(src, 'workflows', 'job.ts');
  const start = /export async function elasticJob\([^)]*\)[^{]*\{/;
  const code = readFileSync(job, 'utf8');
  expect(code).toMatch(start);
  writeFileSync(job, code.replace(start, (m) => `${m}\n  wf.upsertMemo({ testBuild: 'B' });`));
  const bundle = await bundleWorkflowCode({ workflowsPath: path.join(src, 'workflows', 'index.ts'), logger: new DefaultLogger('WARN') });
  writeFileSync(path.join(dir, 'lib', 'workflow-bundle.js'), bundle.code);
  return { dir, code: bundle.code };
}

/** `telastic ARGS…` of the build installed at `install`. */
function startFrom(install: string, name: string, args: string[]): Agent {
  return startTelastic(name, args, {}, [], path.join(install, 'bin', 'telastic.js'));
}

async function deployment(client: Client, name: string): Promise<{ current: string | null; builds: string[] }> {
  const d = await client.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName: name });
  const info = d.workerDeploymentInfo;
  return { current: info?.routingConfig?.currentDeploymentVersion?.buildId || null, builds: (info?.versionSummaries ?? []).map((v) => v.deploymentVersion?.buildId ?? '') };
}

async function pinnedTo(client: Client, workflowId: string): Promise<string | null> {
  const d = await client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId } });
  return d.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId || null;
}

async function temporal(args: string[]): Promise<string> {
  const cli = await resolveTemporalCli();
  const { stdout } = await run(cli, [...args, '--address', testAddress(), '--namespace', 'default'], { timeout: 30_000 });
  return stdout;
}

test('a job moves from build A to build B mid-round with its workers: same round, no restart, no failed workflow task; a new job runs on B', async () => {
  const { dir: install, code: codeB } = await installB();
  const client = new Client({ connection: e2e.conn });
  const job = uniqueJobId('upgrade');
  const queue = `tq-${job}`;
  const ctl = ['controller', '--address', testAddress(), '--task-queue', queue];

  const controllerA = startTelastic(`${job}-ctl-a`, ctl);
  e2e.agents.push(controllerA);
  const a = await waitFor('build A current', async () => (await deployment(client, queue)).current, 60_000);

  const out = tmpDir('upgrade');
  const args = ['--nnodes', '2', '--nproc-per-node', '1', '--rdzv-id', job, '--task-queue', queue, '--no-coordinator', ...FAST_RDZV, WORKER, '--out', out, '--step-time', '0.05'];
  e2e.agents.push(...['n1', 'n2'].map((n) => startAgent(testAddress(), `${job}-${n}`, args)));
  const before = await waitForRound(e2e.conn, job, (s) => s.worldSize === 2, 90_000);
  const pids = await waitFor('both workers running', () => (recordedPids(out).length === 2 ? recordedPids(out) : null));
  expect(await pinnedTo(client, job)).toBe(a);

  // The operator's steps (docs/upgrading.md): start B's controllers, make B current, wake the jobs.
  const controllerB = startFrom(install, `${job}-ctl-b`, ctl);
  e2e.agents.push(controllerB);
  const b = await waitFor('build B polling', async () => (await deployment(client, queue)).builds.find((x) => x !== a), 60_000);
  expect((await deployment(client, queue)).current).toBe(a); // B does not take over while A serves
  const madeCurrent = Date.now();
  await temporal(['worker', 'deployment', 'set-current-version', '--deployment-name', queue, '--build-id', b, '-y']);
  const pinnedA = `TemporalWorkerDeploymentVersion="${queue}:${a}" AND ExecutionStatus="Running"`;
  await waitFor('the job listed as pinned to A', async () => Number((await client.workflowService.countWorkflowExecutions({ namespace: 'default', query: pinnedA })).count) > 0);
  await temporal(['workflow', 'signal', '--query', pinnedA, '--name', 'wake', '--reason', 'upgrade to B', '-y']);
  await waitFor('job pinned to B', async () => (await pinnedTo(client, job)) === b, 60_000);
  console.log(`job ${job} moved from build ${a} to ${b} ${((Date.now() - madeCurrent) / 1000).toFixed(1)} s after B was made current`);

  // Retire A once nothing runs pinned to it.
  await waitFor('nothing pinned to A', async () => Number((await client.workflowService.countWorkflowExecutions({ namespace: 'default', query: pinnedA })).count) === 0, 60_000);
  controllerA.proc.kill('SIGTERM');
  await controllerA.exited;

  // The round goes on under B: the same workers, still alive; the job ends when they do.
  const during = await status(e2e.conn, job);
  expect(during.round).toBe(before.round);
  expect(during.state).toBe('running');
  for (const pid of pids) expect(alive(pid)).toBe(true);
  finish(out);
  const result = await client.workflow.getHandle(job).result();
  expect(result).toMatchObject({ rounds: before.round, restarts: 0, worldSize: 2 });
  expect(recordedPids(out)).toEqual(expect.arrayContaining(pids));
  expect(recordedPids(out)).toHaveLength(2); // no worker started twice

  // Every run of the job: no failed workflow task (a nondeterminism error would be one); the last ran B's code.
  const runs = [];
  for await (const w of client.workflow.list({ query: `WorkflowId="${job}"` })) runs.push(w);
  expect(runs).toHaveLength(2); // A's run and B's
  const last = await client.workflow.getHandle(job).describe();
  for (const r of runs) {
    const history = await client.workflow.getHandle(job, r.runId).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    // What pinning spared the job: B's code replaying the run A wrote fails.
    if (r.runId !== last.runId) {
      await expect(Worker.runReplayHistory({ workflowBundle: { code: codeB } }, history, r.runId)).rejects.toThrow(DeterminismViolationError);
    }
  }
  expect(last.memo?.testBuild).toBe('B');
  expect(e2e.agents.some((x) => /adopted/.test(x.output()))).toBe(true);

  // A job started after the upgrade runs on B.
  const job2 = uniqueJobId('upgrade-after');
  const out2 = tmpDir('upgrade-after');
  const args2 = ['--nnodes', '1', '--nproc-per-node', '1', '--rdzv-id', job2, '--task-queue', queue, '--no-coordinator', ...FAST_RDZV, WORKER, '--out', out2, '--seconds', '1'];
  const agent2 = startAgent(testAddress(), `${job2}-n1`, args2);
  e2e.agents.push(agent2);
  expect(await agent2.exited).toBe(0);
  expect(await pinnedTo(client, job2)).toBe(b);
  expect((await client.workflow.getHandle(job2).describe()).memo?.testBuild).toBe('B');
}, 300_000);
