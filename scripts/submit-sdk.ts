/**
 * Submit a job to a pool with the plain Temporal SDK, no telastic client: what any service that
 * already talks to Temporal can do. Used by scripts/demo-pool.sh.
 *
 *   node lib/scripts/submit-sdk.js ADDRESS POOL JOB_ID CHECKPOINT_DIR SCRIPT [ARGS…]
 *
 * The job may run on 1 or 2 nodes × 1 process; it prints the job id and returns.
 */
import { Client, Connection } from '@temporalio/client';
import path from 'node:path';
import type { JobSpecInput } from '../src/job/spec';

async function main([address, pool, jobId, checkpointDir, script, ...args]: string[]): Promise<void> {
  if (!script) throw new Error('usage: submit-sdk ADDRESS POOL JOB_ID CHECKPOINT_DIR SCRIPT [ARGS…]');
  const connection = await Connection.connect({ address });
  try {
    // Paths are the agents' paths: absolute, so that they do not depend on an agent's cwd.
    const spec: JobSpecInput & { pool: string } = {
      jobId, pool, minNodes: 1, maxNodes: 2, nprocPerNode: 1, maxRestarts: 3,
      checkpointDir: path.resolve(checkpointDir), entrypoint: { script: path.resolve(script), args },
    };
    await new Client({ connection }).workflow.start('elasticJob', { taskQueue: 'telastic', workflowId: jobId, args: [spec] });
    console.log(jobId);
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(`submit-sdk: ${err.message}`);
  process.exit(1);
});
