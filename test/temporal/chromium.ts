/**
 * Debian's chromium, headless, driven over the DevTools protocol on `--remote-debugging-pipe`
 * (fd 3 in, fd 4 out, each message JSON ended by a NUL byte: what puppeteer's `pipe: true` uses),
 * for pages that are applications: `--dump-dom` cannot wait for a single-page app to fetch and
 * render, and Node 20 has no WebSocket for the other transport. Only this machine is reachable:
 * every host name but localhost and the ones given resolves to nothing (the Temporal Web UI, for
 * one, asks for a news feed on the internet).
 *
 * The browser runs in its own process group, killed whole by `close()` (a zygote or GPU helper
 * must not outlive it); `CHROMIUM` is null when it is not installed, for a test to skip on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';

export const CHROMIUM = ['chromium', 'chromium-browser'].map(onPath).find((p): p is string => p !== null) ?? null;

/** A request the page made, as the browser saw it: `status` once answered, `error` if it failed (a CORS refusal, say). */
export interface PageRequest {
  method: string;
  url: string;
  status?: number;
  error?: string;
}

export interface Tab {
  /** Every request the page made, in order. */
  readonly requests: PageRequest[];
  /** Console messages and browser log entries, for a failure message. */
  readonly log: string[];
  /** The page's `document.body.innerText` once `test` accepts it; rejects after `timeoutMs` with the last text seen. */
  waitForText(test: (text: string) => boolean, timeoutMs: number): Promise<string>;
}

export interface Chromium {
  /** Opens `url` in a new tab. */
  open(url: string): Promise<Tab>;
  /** Kills the browser's whole process group. */
  close(): void;
}

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

export interface LaunchOptions {
  /** Runs the browser through this, e.g. `ip netns exec NS` for a browser on another test host (it must exec). */
  wrap?: readonly string[];
  /** Names to resolve, `NAME ADDRESS` each (the browser's own DNS); every other name but localhost (and the addresses 127.0.0.1 and 0.0.0.0) resolves to nothing. */
  hosts?: readonly string[];
}

export function launchChromium(profileDir: string, o: LaunchOptions = {}): Chromium {
  const resolve = [...(o.hosts ?? []).map((h) => `MAP ${h}`), 'MAP * ~NOTFOUND', ...['localhost', '127.0.0.1', '0.0.0.0'].map((h) => `EXCLUDE ${h}`)].join(', ');
  const argv = [...(o.wrap ?? []), CHROMIUM!,
    '--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${profileDir}`, '--remote-debugging-pipe',
    '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--host-resolver-rules=${resolve}`, '--window-size=1400,1000', 'about:blank',
  ];
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  const pending = new Map<number, { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  const sessions = new Map<string, (m: Message) => void>();
  let nextId = 0;
  let exited: Error | undefined;

  let buffered = '';
  fromBrowser.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\0'); end >= 0; end = buffered.indexOf('\0')) {
      const m = JSON.parse(buffered.slice(0, end)) as Message;
      buffered = buffered.slice(end + 1);
      const waiter = m.id === undefined ? undefined : pending.get(m.id);
      if (waiter) {
        pending.delete(m.id!);
        if (m.error) waiter.reject(new Error(`chromium: ${m.error.message}`));
        else waiter.resolve(m.result ?? {});
      } else if (m.sessionId) sessions.get(m.sessionId)?.(m);
    }
  });
  toBrowser.on('error', () => undefined); // a dead browser is reported by 'exit' below
  child.once('exit', (code, signal) => {
    exited = new Error(`chromium exited (${signal ?? `code ${code}`})`);
    for (const w of pending.values()) w.reject(exited);
    pending.clear();
  });

  function send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    if (exited) return Promise.reject(exited);
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      toBrowser.write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });
  }

  async function open(url: string): Promise<Tab> {
    const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = (await send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    const requests: PageRequest[] = [];
    const byId = new Map<string, PageRequest>();
    const log: string[] = [];
    sessions.set(sessionId, ({ method, params = {} }) => {
      const p = params as Record<string, never>;
      if (method === 'Network.requestWillBeSent') {
        const r: PageRequest = { method: p.request['method'], url: p.request['url'] };
        byId.set(p.requestId, r);
        requests.push(r);
      } else if (method === 'Network.responseReceived') {
        const r = byId.get(p.requestId);
        if (r) r.status = p.response['status'];
      } else if (method === 'Network.loadingFailed') {
        const r = byId.get(p.requestId);
        if (!r) return;
        r.error = p.corsErrorStatus ? `CORS ${p.corsErrorStatus['corsError']}` : p.errorText;
        log.push(`failed: ${r.method} ${r.url}: ${r.error}`);
      } else if (method === 'Runtime.consoleAPICalled') {
        log.push(`console.${p.type}: ${(p.args as { value?: unknown; description?: string }[]).map((a) => a.description ?? String(a.value)).join(' ')}`);
      } else if (method === 'Log.entryAdded') {
        log.push(`${p.entry['level']}: ${p.entry['text']}`);
      }
    });
    for (const domain of ['Network', 'Runtime', 'Log']) await send(`${domain}.enable`, {}, sessionId);
    await send('Page.navigate', { url }, sessionId);

    async function text(): Promise<string> {
      const { result } = (await send('Runtime.evaluate', { expression: 'document.body ? document.body.innerText : ""', returnByValue: true }, sessionId)) as { result: { value: string } };
      return result.value;
    }
    async function waitForText(test: (text: string) => boolean, timeoutMs: number): Promise<string> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const seen = await text();
        if (test(seen)) return seen;
        if (Date.now() > until) throw new Error(`the page never showed what was awaited in ${timeoutMs} ms; it shows:\n${seen}\nbrowser log:\n${log.join('\n')}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    return { requests, log, waitForText };
  }

  return {
    open,
    close: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    },
  };
}

function onPath(name: string): string | null {
  for (const d of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(d, name);
    if (d && existsSync(p)) return p;
  }
  return null;
}
