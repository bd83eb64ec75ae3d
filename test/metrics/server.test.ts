/** The metrics and health endpoint (src/metrics/server.ts), over real HTTP. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Gauge, Registry } from 'prom-client';
import { startMetricsServer, type MetricsServer } from '../../src/metrics/server';

let sdk: http.Server;
let sdkUrl: string;
const opened: MetricsServer[] = [];

beforeAll(async () => {
  // Stands in for the SDK's exporter: the endpoint only reads its page.
  sdk = http.createServer((_req, res) => res.end('# TYPE temporal_request_total counter\ntemporal_request_total{operation="Poll"} 7'));
  await new Promise<void>((r) => sdk.listen(0, '127.0.0.1', r));
  sdkUrl = `http://127.0.0.1:${(sdk.address() as AddressInfo).port}/metrics`;
});
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await new Promise((r) => sdk.close(r));
});

async function serve(o: { sdkUrl?: string; ready?: () => Promise<string | null>; beforeScrape?: () => void } = {}) {
  const registry = new Registry();
  const g = new Gauge({ name: 'telastic_job_world_size', help: 'h', labelNames: ['job_id'], registers: [registry] });
  g.set({ job_id: 'a' }, 4);
  const s = await startMetricsServer({ host: '127.0.0.1', port: 0, registry, sdkUrl: o.sdkUrl, ready: o.ready ?? (async () => null), beforeScrape: o.beforeScrape });
  opened.push(s);
  return s;
}

const get = async (url: string) => {
  const res = await fetch(url);
  return { code: res.status, body: await res.text(), type: res.headers.get('content-type') };
};

test('/metrics: telastic\'s series, then the SDK\'s page, in one scrape (refreshed first)', async () => {
  let refreshed = 0;
  const s = await serve({ sdkUrl, beforeScrape: () => refreshed++ });
  const r = await get(`${s.url}/metrics`);
  expect(r.code).toBe(200);
  expect(r.type).toMatch(/^text\/plain; version=0\.0\.4/);
  expect(r.body).toContain('telastic_job_world_size{job_id="a"} 4\n');
  expect(r.body).toMatch(/temporal_request_total\{operation="Poll"\} 7\n$/);
  expect(refreshed).toBe(1);
});

test('/metrics with the SDK\'s exporter down: ours still, and a comment saying why (valid exposition text)', async () => {
  const s = await serve({ sdkUrl: 'http://127.0.0.1:1/metrics' });
  const r = await get(`${s.url}/metrics`);
  expect(r.code).toBe(200);
  expect(r.body).toContain('telastic_job_world_size{job_id="a"} 4');
  expect(r.body).toMatch(/^# temporal SDK metrics unavailable: .+$/m);
});

test('/healthz is 200; /readyz is 200 when ready, else 503 with the one-line reason', async () => {
  let why: string | null = 'not connected to Temporal yet';
  const s = await serve({ ready: async () => why });
  expect(await get(`${s.url}/healthz`)).toMatchObject({ code: 200, body: 'ok\n' });
  expect(await get(`${s.url}/readyz`)).toMatchObject({ code: 503, body: 'not ready: not connected to Temporal yet\n' });
  why = null;
  expect(await get(`${s.url}/readyz`)).toMatchObject({ code: 200, body: 'ready\n' });
  expect((await get(`${s.url}/nothing`)).code).toBe(404);
});

test('/readyz whose check throws: 503 with the error\'s first line', async () => {
  const s = await serve({ ready: async () => { throw new Error('Temporal unreachable: 14 UNAVAILABLE\nstack…'); } });
  expect(await get(`${s.url}/readyz`)).toMatchObject({ code: 503, body: 'not ready: Temporal unreachable: 14 UNAVAILABLE\n' });
});

test('a taken port is an error at start, not a silent endpoint elsewhere', async () => {
  const s = await serve();
  const port = Number(new URL(s.url).port);
  await expect(startMetricsServer({ host: '127.0.0.1', port, registry: new Registry(), ready: async () => null })).rejects.toThrow(/EADDRINUSE/);
});
