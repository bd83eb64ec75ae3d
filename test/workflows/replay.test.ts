/**
 * Determinism: recorded job histories must replay against the current workflow code. A change
 * that would break running jobs (reordered commands, new activities without patching) fails here.
 * Record one from a finished job with:
 *   temporal workflow show -w WORKFLOW_ID --output json > test/fixtures/histories/NAME.json
 * (scripts/record-histories.sh runs the scenario below and does this).
 * All recorded from one job (job id recorded-job): node-a starts (1:2 nodes × 2), rank 1 crashes
 * (one restart), node-b joins through the lobby (admitted, no restart), the job succeeds.
 *   job-crash-join-restart.json   the job workflow (elasticJob)
 *   prepare-group.json            a prepareGroup child of round 3
 *   run-group-cancelled.json      round 2's runGroup, cancelled to admit node-b
 *   run-group-finished.json       round 3's runGroup: signals the first finished node, succeeds
 *   lobby.json                    the lobby (jobLobby): two batches, then ends when quiet
 */
import { Worker } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

test('there are recorded histories of every workflow type to replay', () => {
  const types = files.map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')).events[0].workflowExecutionStartedEventAttributes.workflowType.name);
  expect(new Set(types)).toEqual(new Set(['elasticJob', 'prepareGroup', 'runGroup', 'jobLobby']));
});

test.each(files)('%s replays against the current workflow code', async (file) => {
  const history = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  await expect(
    Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows'), replayName: file }, history),
  ).resolves.toBeUndefined();
});
