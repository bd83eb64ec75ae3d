/**
 * Nothing accepted is lost (issue 16): a drain, and separately a scale, accepted while a round's
 * checkpoint lookup is running take effect. The lookup is made slow the way a real directory
 * makes it slow: thousands of truncated checkpoints newer than the one complete checkpoint, each
 * of which the scan must open and reject. The test checks, in the job's history, that the
 * message really was accepted between the lookup's start and its end (else it proves nothing).
 */
import { writeFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { drainNode, scaleJob } from '../../src/client/api';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, WORKER, e2eSuite, finish, startAgent, startTelastic, status, tmpDir, uniqueJobId, waitFor, waitForRound } from './harness';

const e2e = e2eSuite();
const TRUNCATED = 40_000;

/** One bare-pickle checkpoint at step 1, and TRUNCATED newer `.pt` files with no zip end record. */
function slowCheckpointDir(): string {
  const dir = path.join(tmpDir('lookup'), 'ckpt');
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'ckpt_000001.pt'), Buffer.from([0x80, 0x02, 0x4e, 0x2e]));
  const torn = Buffer.from('PK\x03\x04 torn write');
  for (let i = 2; i < TRUNCATED + 2; i++) writeFileSync(path.join(dir, `ckpt_${String(i).padStart(6, '0')}.pt`), torn);
  return dir;
}

/** Event ids of the first findCheckpoint's scheduling and end, and of the first accepted update (-1: none). */
async function order(client: Client, jobId: string): Promise<{ scheduled: number; ended: number; accepted: number }> {
  const events = (await client.workflow.getHandle(jobId).fetchHistory()).events ?? [];
  const id = (e: (typeof events)[number] | undefined) => (e ? Number(e.eventId) : -1);
  const scheduled = id(events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'findCheckpoint'));
  const endOf = (e: (typeof events)[number]) =>
    e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
  return {
    scheduled,
    ended: id(events.find((e) => Number(endOf(e)?.scheduledEventId ?? -2) === scheduled)),
    accepted: id(events.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes)),
  };
}

/** Wait until the round's lookup has been scheduled (it then takes seconds to scan). */
async function lookupStarted(client: Client, jobId: string): Promise<void> {
  await waitFor('the checkpoint lookup to start', async () => (await order(client, jobId)).scheduled > 0, 60_000, 50);
}

describe.each(['drain', 'scale'] as const)('a %s accepted during the checkpoint lookup', (kind) => {
  test('takes effect', async () => {
    const ckpt = slowCheckpointDir();
    const job = uniqueJobId(`lookup-${kind}`);
    const queue = `tq-${job}`;
    const client = new Client({ connection: e2e.conn });
    try {
      e2e.agents.push(startTelastic(`${job}-controller`, ['controller', '--address', testAddress(), '--task-queue', queue]));
      const out = tmpDir('lookup-out');
      const args = ['--nnodes', '1:2', '--no-coordinator', '--task-queue', queue, '--rdzv-id', job, '--checkpoint-dir', ckpt, ...FAST_RDZV, WORKER, '--out', out];
      const [a, b] = ['a', 'b'].map((n) => startAgent(testAddress(), `${job}-${n}`, args));
      e2e.agents.push(a, b);
      await lookupStarted(client, job);
      if (kind === 'drain') await expect(drainNode({ connection: e2e.conn }, job, b.nodeId)).resolves.toBe('applied');
      else await expect(scaleJob({ connection: e2e.conn }, job, { maxNodes: 1 })).resolves.toEqual({ minNodes: 1, maxNodes: 1 });

      const after = await waitForRound(e2e.conn, job, (s) => s.worldSize === 1, 90_000);
      const o = await order(client, job);
      // The message landed while the lookup ran: between its scheduling and its end.
      expect(o.scheduled).toBeGreaterThan(0);
      expect(o.accepted).toBeGreaterThan(o.scheduled);
      expect(o.ended).toBeGreaterThan(o.accepted);
      expect(after.restarts).toBe(0);
      expect(after.checkpoint?.path).toBe(path.join(ckpt, 'ckpt_000001.pt'));
      const runner = after.nodes.find((n) => n.groupRank === 0)!.nodeId;
      if (kind === 'drain') {
        expect([runner, after.nodes.find((n) => n.nodeId === b.nodeId)?.state]).toEqual([a.nodeId, 'drained']);
        expect(await b.exited).toBe(0); // a drained `telastic run` exits 0
      } else {
        // The newest member steps back as a spare (either may have joined first).
        expect(after.maxNodes).toBe(1);
        expect(after.spares).toEqual([a.nodeId, b.nodeId].filter((n) => n !== runner));
      }
      finish(out);
      expect(await [a, b].find((x) => x.nodeId === runner)!.exited).toBe(0);
      expect((await status(e2e.conn, job)).state).toBe('succeeded');
    } finally {
      rmSync(path.dirname(ckpt), { recursive: true, force: true });
    }
  }, 240_000);
});
