/**
 * The dev server's own counts, for the scale benchmark: its Prometheus endpoint (heartbeats,
 * resource-exhausted errors) and extra server flags. startDevServer takes the path of the
 * `temporal` CLI; a two-line wrapper script in a temp dir appends `--metrics-port` and any
 * `--dynamic-config-value` to what it passes, so the benchmark needs no change to it.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { resolveTemporalCli } from '../src/temporal/binary';
import { freePort } from '../src/temporal/ports';

export async function cliWithMetrics(dynamicConfig: string[] = []): Promise<{ cli: string; metricsPort: number }> {
  const real = await resolveTemporalCli();
  const metricsPort = await freePort('127.0.0.1');
  const extra = ['--metrics-port', String(metricsPort), ...dynamicConfig.flatMap((kv) => ['--dynamic-config-value', kv])];
  const cli = path.join(mkdtempSync(path.join(os.tmpdir(), 'telastic-cli-')), 'temporal');
  writeFileSync(cli, `#!/bin/sh\nexec ${JSON.stringify(real)} "$@" ${extra.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')}\n`);
  chmodSync(cli, 0o755);
  return { cli, metricsPort };
}

export function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve(body));
    }).on('error', reject);
  });
}

/** Sum of every series of `name` whose labels contain all of `labels` (e.g. 'operation="X"'). */
export function sumOf(text: string, name: string, ...labels: string[]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!labels.every((l) => line.includes(l))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  }
  return sum;
}

/** Every series of `name` with a non-zero value, as `labels value` lines. */
export function nonZero(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) && Number(l.slice(l.lastIndexOf(' ') + 1)) > 0);
}
