/**
 * Worker Versioning (docs/upgrading.md): every worker that hosts telastic's workflows is a
 * version of a Temporal worker deployment, and each workflow is pinned to the version it started
 * on, so that a newer build never replays a history the older one wrote.
 *
 * The deployment is named after the control task queue (TELASTIC_DEPLOYMENT_NAME overrides it),
 * the version after telastic's package version and a hash of the workflow bundle
 * (TELASTIC_BUILD_ID overrides it): two different workflow codes never share a build id, and two
 * installs of the same code always do.
 */
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { findProjectRoot } from './binary';

/** A worker of the current build polls at least this often (a long poll lasts about a minute). */
export const POLLER_SEEN_MS = 90_000;

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.join(findProjectRoot(__dirname), 'package.json'), 'utf8')) as { version?: string }).version ?? '0';
  } catch {
    return '0';
  }
}

/** This worker's version: `<package version>+<12 hex of the bundle's sha256>` unless the environment names one. */
export function workerVersion(taskQueue: string, bundleCode: string, env: NodeJS.ProcessEnv = process.env): WorkerDeploymentVersion {
  const hash = createHash('sha256').update(bundleCode).digest('hex').slice(0, 12);
  return {
    deploymentName: env.TELASTIC_DEPLOYMENT_NAME || taskQueue,
    buildId: env.TELASTIC_BUILD_ID || `${packageVersion()}+${hash}`,
  };
}

export function versionName(v: WorkerDeploymentVersion): string {
  return `${v.deploymentName}:${v.buildId}`;
}

type Service = NativeConnection['workflowService'];

/** What a worker found, and did, about its deployment's current version. */
export type Claim = { made: 'current'; previous: string | null } | { made: 'nothing'; current: string };

/**
 * Make `version` the deployment's current version when there is none (a new deployment), or when
 * no worker of the current build has polled `taskQueue` for POLLER_SEEN_MS (it was retired
 * without making another build current: `telastic run` agents upgraded one job at a time).
 * Otherwise leave it: making a build current while another serves is the operator's step.
 */
export async function claimCurrentVersion(service: Service, namespace: string, taskQueue: string, version: WorkerDeploymentVersion, now = Date.now()): Promise<Claim> {
  const { deploymentName, buildId } = version;
  for (let attempt = 1; ; attempt++) {
    let current: { buildId: string } | null = null;
    let conflictToken: Uint8Array | undefined;
    try {
      const d = await service.describeWorkerDeployment({ namespace, deploymentName });
      conflictToken = d.conflictToken ?? undefined;
      const cur = d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion;
      current = cur?.buildId ? { buildId: cur.buildId } : null;
    } catch (err) {
      if ((err as { code?: number }).code !== 5) throw err; // NOT_FOUND: no worker of it has polled yet
    }
    if (current?.buildId === buildId) return { made: 'nothing', current: versionName(version) };
    if (current && (await polledRecently(service, namespace, taskQueue, deploymentName, current.buildId, now))) {
      return { made: 'nothing', current: `${deploymentName}:${current.buildId}` };
    }
    try {
      // No pollers yet is fine: this worker is about to poll; a job started meanwhile waits for it.
      await service.setWorkerDeploymentCurrentVersion({ namespace, deploymentName, buildId, conflictToken, allowNoPollers: true, ignoreMissingTaskQueues: true, identity: `telastic ${buildId}` });
      return { made: 'current', previous: current ? `${deploymentName}:${current.buildId}` : null };
    } catch (err) {
      // Another worker changed the deployment between our describe and set: look again.
      if (attempt >= 5) throw err;
    }
  }
}

async function polledRecently(service: Service, namespace: string, taskQueue: string, deploymentName: string, buildId: string, now: number): Promise<boolean> {
  const tq = await service.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 /* WORKFLOW */ });
  return (tq.pollers ?? []).some((p) => {
    const o = p.deploymentOptions;
    const seen = Number(p.lastAccessTime?.seconds ?? 0) * 1000;
    return o?.deploymentName === deploymentName && o.buildId === buildId && now - seen < POLLER_SEEN_MS;
  });
}
