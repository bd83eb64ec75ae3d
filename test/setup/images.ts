/**
 * Images the Docker tests build with their private dockerd (test/setup/docker.ts):
 *   - `telastic:test` from the repository's Dockerfile on the local Node base (the BASE build
 *     argument), the image users build;
 *   - stand-ins for Docker Hub's postgres:15, temporalio/server and temporalio/admin-tools, made
 *     of the same software (Debian's PostgreSQL 15; the Temporal server and tools built from the
 *     server module, and the Temporal CLI from .venv) for the compose test's override.
 * The daemon's data root is cached, so a second run reuses every unchanged layer.
 */
import { copyFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../../test-support/agents';
import type { TestDocker } from './docker';
import { TEMPORAL_SERVER_VERSION, temporalServerDir } from './temporal-cluster';

export const TELASTIC_IMAGE = 'telastic:test';
export const TEMPORAL_IMAGES = { server: `temporalio/server:${TEMPORAL_SERVER_VERSION}`, adminTools: `temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}` } as const;
export const POSTGRES_IMAGE = 'postgres:15';

const BUILD = { env: { DOCKER_BUILDKIT: '0' }, timeoutMs: 20 * 60_000 };

export interface Built { tag: string; seconds: number; bytes: number }

/** `docker build` of the repository, as a user runs it but from the local base. */
export async function buildTelasticImage(d: TestDocker): Promise<Built> {
  const base = await d.base('node');
  const t0 = Date.now();
  await d.must(['build', '--network', 'host', '--build-arg', `BASE=${base}`, '-t', TELASTIC_IMAGE, ROOT], BUILD);
  const seconds = (Date.now() - t0) / 1000;
  const bytes = Number((await d.must(['image', 'inspect', '--format', '{{.Size}}', TELASTIC_IMAGE])).trim());
  return { tag: TELASTIC_IMAGE, seconds, bytes };
}

/** The stand-ins, tagged with the names docker-compose.yml uses. */
export async function buildStandIns(d: TestDocker): Promise<void> {
  const pg = await d.base('pg');
  await d.must(['build', '--build-arg', `BASE=${pg}`, '-t', POSTGRES_IMAGE, path.join(ROOT, 'test', 'docker', 'postgres')], BUILD);
  const ctx = mkdtempSync(path.join(os.tmpdir(), 'telastic-temporal-image-'));
  try {
    const server = temporalServerDir();
    cpSync(path.join(ROOT, 'test', 'docker', 'temporal'), ctx, { recursive: true });
    copyFileSync(path.join(server, 'bin', 'temporal-server'), path.join(ctx, 'temporal-server'));
    copyFileSync(path.join(server, 'bin', 'temporal-sql-tool'), path.join(ctx, 'temporal-sql-tool'));
    copyFileSync(path.join(ROOT, '.venv', 'bin', 'temporal'), path.join(ctx, 'temporal'));
    cpSync(path.join(server, 'schema'), path.join(ctx, 'schema'), { recursive: true });
    for (const [target, tag] of [['admin-tools', TEMPORAL_IMAGES.adminTools], ['server', TEMPORAL_IMAGES.server]]) {
      await d.must(['build', '--build-arg', `BASE=${pg}`, '--target', target, '-t', tag, ctx], BUILD);
    }
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}
