/** `telastic cancel`: every node's workers stop and every `telastic run` exits non-zero. */
import { Client, Connection } from '@temporalio/client';
import { TelasticRound, TelasticState, TelasticWorldSize } from '../../src/temporal/search-attributes';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { testAddress } from '../setup/temporal';
import { BIN, FAST_RDZV, WORKER, alive, recordedPids, startAgent, status, stopAll, tmpDir, uniqueJobId, waitFor, waitForRound, type Agent } from './harness';

const agents: Agent[] = [];
afterAll(() => stopAll(agents));

test('cancel stops the workers on every node; each agent exits 1 saying the job was cancelled', async () => {
  const conn = await Connection.connect({ address: testAddress() });
  const out = tmpDir('cancel');
  const job = uniqueJobId('cancel');
  const args = ['--nnodes', '2', '--nproc-per-node', '2', '--rdzv-id', job, ...FAST_RDZV, WORKER, '--out', out];
  agents.push(startAgent(testAddress(), 'cancel-a', args), startAgent(testAddress(), 'cancel-b', args));
  const s = await waitForRound(conn, job, (x) => x.worldSize === 4);
  await waitFor('4 workers', () => recordedPids(out, s.round).length === 4);
  const pids = recordedPids(out, s.round);

  const r = await promisify(execFile)(process.execPath, [BIN, 'cancel', job, '--address', testAddress()]);
  expect(r.stdout).toContain(`job ${job}: cancel requested`);
  expect(await Promise.all(agents.map((a) => a.exited))).toEqual([1, 1]);
  for (const a of agents) expect(a.output()).toContain(`job ${job} was cancelled`);
  expect(pids.filter(alive)).toEqual([]);
  expect(await status(conn, job)).toMatchObject({ state: 'cancelled', round: s.round });
  // The Web UI's list reads the job from its search attributes.
  const desc = await new Client({ connection: conn }).workflow.getHandle(job).describe();
  expect(desc.status.name).toBe('CANCELLED');
  expect(desc.typedSearchAttributes.get(TelasticState)).toBe('cancelled');
  expect(desc.typedSearchAttributes.get(TelasticWorldSize)).toBe(0);
  expect(desc.typedSearchAttributes.get(TelasticRound)).toBe(s.round);
  await conn.close();
});
