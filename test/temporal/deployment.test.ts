/**
 * Worker deployments against the suite's real dev server: a worker's build becomes current only
 * when the deployment has none, or when the current build's workers stopped polling.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { POLLER_SEEN_MS, claimCurrentVersion, workerVersion } from '../../src/temporal/deployment';
import { ROOT } from '../../test-support/agents';
import { testAddress } from '../setup/temporal';

test('the build id hashes the workflow code; the environment can name both', () => {
  const a = workerVersion('telastic', 'code A', {});
  expect(a.deploymentName).toBe('telastic');
  expect(a.buildId).toMatch(/^\d+\.\d+\.\d+\+[0-9a-f]{12}$/);
  expect(workerVersion('telastic', 'code A', {}).buildId).toBe(a.buildId);
  expect(workerVersion('telastic', 'code B', {}).buildId).not.toBe(a.buildId);
  expect(workerVersion('telastic', 'code A', { TELASTIC_DEPLOYMENT_NAME: 'prod', TELASTIC_BUILD_ID: 'v7' })).toEqual({ deploymentName: 'prod', buildId: 'v7' });
});

test('a new deployment takes the first build; a second takes over only once the first stopped polling', async () => {
  const bundle = path.join(ROOT, 'lib', 'workflow-bundle.js');
  expect(existsSync(bundle)).toBe(true); // npm run build
  const conn = await NativeConnection.connect({ address: testAddress() });
  const queue = `deployment-${process.pid}-${Date.now().toString(36)}`;
  const a = { deploymentName: queue, buildId: 'a' };
  const b = { deploymentName: queue, buildId: 'b' };
  const current = async () => (await conn.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName: queue })).workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
  try {
    expect(await claimCurrentVersion(conn.workflowService, 'default', queue, a)).toEqual({ made: 'current', previous: null });
    expect(await current()).toBe('a');

    const worker = await Worker.create({
      connection: conn, taskQueue: queue, workflowBundle: { codePath: bundle },
      workerDeploymentOptions: { useWorkerVersioning: true, version: a, defaultVersioningBehavior: 'PINNED' },
    });
    const running = worker.run();
    for (let i = 0; i < 100; i++) {
      const tq = await conn.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: queue }, taskQueueType: 1 });
      if ((tq.pollers ?? []).some((p) => p.deploymentOptions?.buildId === 'a')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await claimCurrentVersion(conn.workflowService, 'default', queue, b)).toEqual({ made: 'nothing', current: `${queue}:a` });
    expect(await current()).toBe('a');
    worker.shutdown();
    await running;

    // As if POLLER_SEEN_MS had passed without a poll of build a.
    expect(await claimCurrentVersion(conn.workflowService, 'default', queue, b, Date.now() + POLLER_SEEN_MS + 1000)).toEqual({ made: 'current', previous: `${queue}:a` });
    expect(await current()).toBe('b');
  } finally {
    await conn.close();
  }
}, 60_000);
