/**
 * The metrics and health endpoint of one telastic process: `/metrics` (telastic's registry,
 * then the Temporal SDK's own exporter, scraped on loopback and appended, so that one scrape
 * target has both), `/healthz` (the process is alive: 200) and `/readyz` (200 once connected to
 * Temporal with its workers polling; 503 and a one-line reason otherwise).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** Why the process is not ready, in one line; null when it is. */
export type Readiness = () => Promise<string | null>;

export interface MetricsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /** The SDK's Prometheus exporter (http://127.0.0.1:PORT/metrics), when the runtime has one. */
  sdkUrl?: string;
  ready: Readiness;
  /** Called before each scrape: values read from the process itself (an agent's workers). */
  beforeScrape?: () => void;
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

const SDK_SCRAPE_TIMEOUT_MS = 2000;
const READY_TIMEOUT_MS = 3000;

async function sdkText(url: string | undefined): Promise<string> {
  if (!url) return '';
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS) });
    if (!res.ok) return `# temporal SDK metrics unavailable: HTTP ${res.status}\n`;
    const text = await res.text();
    return text.endsWith('\n') || text === '' ? text : `${text}\n`;
  } catch (err) {
    return `# temporal SDK metrics unavailable: ${(err as Error).message.split('\n')[0]}\n`;
  }
}

async function readiness(ready: Readiness): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${READY_TIMEOUT_MS / 1000}s`), READY_TIMEOUT_MS)));
  try {
    return await Promise.race([ready().catch((err: Error) => err.message.split('\n')[0] || 'not ready'), late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function startMetricsServer(o: MetricsServerOptions): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'GET only\n');
    const route = (req.url ?? '/').split('?')[0];
    if (route === '/healthz') return send(200, 'ok\n');
    if (route === '/readyz') {
      void readiness(o.ready).then((why) => (why === null ? send(200, 'ready\n') : send(503, `not ready: ${why}\n`)));
      return;
    }
    if (route === '/metrics') {
      o.beforeScrape?.();
      void Promise.all([o.registry.metrics(), sdkText(o.sdkUrl)]).then(
        ([ours, sdk]) => send(200, ours + sdk, o.registry.contentType),
        (err: Error) => send(500, `${err.message}\n`),
      );
      return;
    }
    send(404, 'not found: /metrics, /healthz, /readyz\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shown = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `http://${shown}:${port}`,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
