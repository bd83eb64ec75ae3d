/**
 * Determinism: recorded job histories must replay against the current workflow code. A change
 * that makes the same inputs send different commands (a nondeterministic workflow) fails here.
 * Record one from a finished job with:
 *   temporal workflow show -w WORKFLOW_ID --output json > test/fixtures/histories/NAME.json
 * (scripts/record-histories.sh runs the scenario below and does this).
 * Recorded by that script: node-a starts (1:2 nodes × 2), rank 1 crashes (one restart), node-b
 * joins through its lobby, the job succeeds. (Which round first has both nodes depends on how
 * fast the agents start: round 3 in the fixtures of 2026-12-01.)
 *   job-one-group.json   default group_size: every round runs in the job itself (elasticJob)
 *   job-in-groups.json   GROUP_SIZE=1: each 2-node round runs in two group child workflows
 *   prepare-group.json   one of round 3's prepareGroup children
 *   run-group.json       one of round 3's runGroup children
 * The fixtures are re-recorded whenever the workflow code changes what it sends: running jobs
 * keep their own build through Worker Versioning (docs/upgrading.md), so replay here guards a
 * build against accidental nondeterminism, not against older builds.
 *   lobby.json           node-b's lobby (jobLobby): forwards its join, ends when quiet
 * Recorded by scripts/record-pool-histories.sh: two pool agents, a job submitted to their pool
 * (granted both, one restart, succeeds), then one agent leaves (SIGTERM) and one is killed.
 *   pool-job.json        the submitted job (elasticJob with a pool: link, grants, release)
 *   pool.json            the pool (nodePool): registers, leases, grants, depart, a lapsed lease
 * Recorded by scripts/record-ledger-histories.sh: a controller hosting the embedded ledger; a job
 * whose node fails twice is quarantined (the job runs on without it), released, admitted again.
 *   ledger-job.json      the job with its ledger outbox, quarantine checks and timer summaries
 * Recorded by scripts/record-preempt-histories.sh: examples/train.py on two agents (1:2 × 1); node-b
 * is drained with --checkpoint-first, every worker checkpoints, the job goes on alone and succeeds.
 *   preempt-job.json     the checkpoint-first drain: baseline scan, checkpoint signals, the wait
 * Recorded by scripts/record-peer-watch-history.sh: node-a and node-b (1:2 × 2); node-b's agent is
 * killed with SIGKILL, node-a's runWorkers ends with peerLost naming it (the `peer-watch` patch),
 * round 2 prepares node-a alone, one restart, the job succeeds.
 *   peer-watch-job.json  the job with the patch marker, the watch ports and the peerLost result
 * Recorded by scripts/record-nudge-history.sh: node-a and node-b (1:2 × 2); node-b's agent is frozen
 * past the heartbeat timeout, dropped as lost and nudged (the `nudge-fate` patch); thawed, it takes
 * the nudge, asks, joins again, and a round of both runs before the job succeeds.
 *   nudge-job.json       the job with the nudge marker and node-b's completed nudge
 */
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { workerDataConverter } from '../../src/temporal/data-converter';
import { keyId } from '../../src/temporal/sealing';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

test('there are recorded histories of every workflow type to replay', () => {
  const types = files.map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')).events[0].workflowExecutionStartedEventAttributes.workflowType.name);
  expect(new Set(types)).toEqual(new Set(['elasticJob', 'prepareGroup', 'runGroup', 'jobLobby', 'nodePool']));
});

test.each(files)('%s replays against the current workflow code', async (file) => {
  const history = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  await expect(
    Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows'), replayName: file }, history),
  ).resolves.toBeUndefined();
});

/**
 * Sealed payloads: a job started before its nodes had a key goes on after the upgrade, on nodes
 * started with --accept-unsealed (the upgrade window). With a worker's codec (stand-ins for
 * refused payloads) and the sealing failure converter installed and a key configured, the
 * histories recorded unsealed still replay (their payloads pass through the codec).
 */
test('every recorded (unsealed) history replays with sealing installed, a key configured and --accept-unsealed', async () => {
  const key = randomBytes(32);
  const dataConverter = workerDataConverter([{ id: keyId(key), key, source: 'test key' }], { acceptUnsealed: true });
  const histories = files.map((f) => ({ workflowId: f, history: historyFromJSON(JSON.parse(readFileSync(path.join(dir, f), 'utf8'))) }));
  const results = [];
  for await (const r of Worker.runReplayHistories({ workflowsPath: require.resolve('../../workflows'), dataConverter, replayName: 'sealed' }, histories)) {
    results.push({ file: r.workflowId, error: r.error?.message });
  }
  expect(results).toEqual(files.map((file) => ({ file, error: undefined })));
});
