/** The torchrun contract: every worker gets exactly torchrun's environment (2 nodes × 2 procs). */
import { Connection } from '@temporalio/client';
import { testAddress } from '../setup/temporal';
import { FAST_RDZV, WORKER, recordedEnvs, startAgent, stopAll, tmpDir, uniqueJobId, type Agent } from './harness';

const agents: Agent[] = [];
afterAll(() => stopAll(agents));

test('2 nodes × 2 processes get torchrun\'s environment, ranks in group order', async () => {
  const out = tmpDir('env');
  const job = uniqueJobId('env');
  const args = ['--nnodes', '2', '--nproc-per-node', '2', '--rdzv-id', job, '--max-restarts', '3', ...FAST_RDZV, WORKER, '--out', out, '--seconds', '0.5'];
  const base = { PYTHON_EXEC: 'python3', TORCH_NCCL_ASYNC_ERROR_HANDLING: undefined };
  agents.push(startAgent(testAddress(), 'env-a', args, { ...base, OMP_NUM_THREADS: '4' }));
  agents.push(startAgent(testAddress(), 'env-b', args, { ...base, OMP_NUM_THREADS: undefined }));
  const codes = await Promise.all(agents.map((a) => a.exited));
  expect(codes).toEqual([0, 0]);

  const envs = recordedEnvs(out);
  expect([...envs.keys()].sort()).toHaveLength(4);
  const byRank = new Map([...envs.values()].map((e) => [Number(e.RANK), e]));
  expect([...byRank.keys()].sort()).toEqual([0, 1, 2, 3]);
  const master = byRank.get(0)!;
  for (const [rank, e] of byRank) {
    const groupRank = Math.floor(rank / 2);
    expect(e).toMatchObject({
      RANK: String(rank),
      LOCAL_RANK: String(rank % 2),
      WORLD_SIZE: '4',
      LOCAL_WORLD_SIZE: '2',
      GROUP_RANK: String(groupRank),
      GROUP_WORLD_SIZE: '2',
      ROLE_RANK: String(rank),
      ROLE_NAME: 'default',
      ROLE_WORLD_SIZE: '4',
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: master.MASTER_PORT,
      TORCHELASTIC_RESTART_COUNT: '0',
      TORCHELASTIC_MAX_RESTARTS: '3',
      TORCHELASTIC_RUN_ID: job,
      TORCHELASTIC_USE_AGENT_STORE: 'False',
      TELASTIC_JOB_ID: job,
      TELASTIC_ROUND: '1',
    });
    expect(Number(e.MASTER_PORT)).toBeGreaterThan(0);
    expect(e.TORCHELASTIC_ERROR_FILE).toMatch(/error_\d\.json$/);
    expect(e.TORCH_NCCL_ASYNC_ERROR_HANDLING).toBe('1');
    expect(e.TELASTIC_RESUME_FROM).toBeUndefined();
    expect(e.TELASTIC_CHECKPOINT_DIR).toBeUndefined();
  }
  // Both local ranks of a node sit on the same node and group rank.
  const nodeOf = (r: number) => byRank.get(r)!.TELASTIC_NODE_ID;
  expect(nodeOf(0)).toBe(nodeOf(1));
  expect(nodeOf(2)).toBe(nodeOf(3));
  expect(nodeOf(0)).not.toBe(nodeOf(2));
  // OMP_NUM_THREADS=1 only where the agent's environment left it unset.
  const omp = (node: string) => [...byRank.values()].find((e) => e.TELASTIC_NODE_ID === node)!.OMP_NUM_THREADS;
  expect(omp('env-a')).toBe('4');
  expect(omp('env-b')).toBe('1');
  await Connection.connect({ address: testAddress() }).then((c) => c.close());
});
