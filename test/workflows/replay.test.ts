/**
 * Determinism: recorded job histories must replay against the current workflow code. A change
 * that would break running jobs (reordered commands, new activities without patching) fails here.
 * Record one from a finished job with:
 *   temporal workflow show -w JOB_ID --output json > test/fixtures/histories/NAME.json
 * crash-join-restart.json: node-a starts (1:2 nodes × 2), node-b joins (admitted, no restart),
 * rank 1 crashes (one restart), the job succeeds.
 */
import { Worker } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

test('there are recorded histories to replay', () => {
  expect(files.length).toBeGreaterThan(0);
});

test.each(files)('%s replays against the current workflow code', async (file) => {
  const history = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  await expect(
    Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows'), replayName: file }, history),
  ).resolves.toBeUndefined();
});
