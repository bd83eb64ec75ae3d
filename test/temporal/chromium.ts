/**
 * Debian's chromium, headless, driven by puppeteer-core over `--remote-debugging-pipe`, for pages
 * that are applications (`--dump-dom` cannot wait for a single-page app to fetch and render).
 * Only this machine is reachable: every host name but localhost and the ones given resolves to
 * nothing (the Temporal Web UI, for one, asks for a news feed on the internet).
 *
 * `close()` lets puppeteer close the browser, then kills its whole process group (puppeteer
 * starts it as a group leader), so a zygote or renderer cannot outlive it; puppeteer kills the
 * group itself when a launch fails and when this process exits.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import puppeteer, { type HTTPRequest } from 'puppeteer-core';
import { CHROMIUM } from '../setup/chromium';

export { CHROMIUM };

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
  /** Console messages, page errors and failed requests, for a failure message. */
  readonly log: string[];
  /** The page's `document.body.innerText` once it contains `needle`; rejects after `timeoutMs` with the text seen then and the log. */
  waitForText(needle: string, timeoutMs: number): Promise<string>;
}

export interface Chromium {
  /** Opens `url` in a new tab. */
  open(url: string): Promise<Tab>;
  /** Closes the browser and kills its whole process group; never rejects. */
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** Runs the browser through this, e.g. `ip netns exec NS` for a browser on another test host (it must exec). */
  wrap?: readonly string[];
  /** Names to resolve, `NAME ADDRESS` each (the browser's own DNS); every other name but localhost (and the addresses 127.0.0.1 and 0.0.0.0) resolves to nothing. */
  hosts?: readonly string[];
}

const BODY_TEXT = 'document.body ? document.body.innerText : ""';
/** What the Temporal Web UI shows when a call to its server failed. */
const UI_ERROR_PAGE = "Uh oh. There's an error.";

/** Launches chromium with its profile (and the `wrap` script, if any) in `dir`, which it creates. */
export async function launchChromium(dir: string, o: LaunchOptions = {}): Promise<Chromium> {
  mkdirSync(dir, { recursive: true });
  const resolve = [...(o.hosts ?? []).map((h) => `MAP ${h}`), 'MAP * ~NOTFOUND', ...['localhost', '127.0.0.1', '0.0.0.0'].map((h) => `EXCLUDE ${h}`)].join(', ');
  // puppeteer runs an executable with its arguments, nothing in front: a script that execs the wrap keeps the pid (and group) chromium's.
  let executablePath = CHROMIUM!;
  if (o.wrap) {
    executablePath = path.join(dir, 'chromium.sh');
    writeFileSync(executablePath, `#!/bin/sh\nexec ${[...o.wrap, CHROMIUM!].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')} "$@"\n`, { mode: 0o755 });
  }
  const browser = await puppeteer.launch({
    executablePath, pipe: true, headless: true, userDataDir: path.join(dir, 'profile'), defaultViewport: { width: 1400, height: 1000 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-component-update', `--host-resolver-rules=${resolve}`],
  });
  const group = browser.process()!.pid!;

  async function open(url: string): Promise<Tab> {
    const page = await browser.newPage();
    const requests: PageRequest[] = [];
    const seen = new Map<HTTPRequest, PageRequest>();
    const log: string[] = [];
    page.on('request', (req) => {
      const r: PageRequest = { method: req.method(), url: req.url() };
      seen.set(req, r);
      requests.push(r);
    });
    page.on('response', (res) => {
      const r = seen.get(res.request());
      if (r) r.status = res.status();
      if (res.status() >= 500) log.push(`${res.status()}: ${res.request().method()} ${res.url()}`);
    });
    page.on('requestfailed', (req) => {
      const r = seen.get(req);
      if (!r) return;
      r.error = req.failure()?.errorText ?? 'failed';
      log.push(`failed: ${r.method} ${r.url}: ${r.error}`);
    });
    page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => log.push(`page error: ${String(e)}`));
    await page.goto(url, { waitUntil: 'domcontentloaded' });

    /**
     * Waits for `needle` in the page's text. The Temporal Web UI shows its error page when its
     * server could not reach Temporal yet (a 503 just after start): then the page is reloaded,
     * as a user would, until the time is up.
     */
    async function waitForText(needle: string, timeoutMs: number): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      const found = `(${BODY_TEXT}).includes(${JSON.stringify(needle)})`;
      const failed = `(${BODY_TEXT}).includes(${JSON.stringify(UI_ERROR_PAGE)})`;
      for (;;) {
        try {
          await page.waitForFunction(`${found} || ${failed}`, { timeout: Math.max(1, deadline - Date.now()), polling: 'mutation' });
          if (await page.evaluate(found)) return (await page.evaluate(BODY_TEXT)) as string;
          log.push(`the UI showed its error page: reloading`);
          await new Promise((r) => setTimeout(r, 500));
          await page.reload({ waitUntil: 'domcontentloaded' });
        } catch (err) {
          if (Date.now() < deadline) continue;
          const shown = await page.evaluate(BODY_TEXT).catch((e: Error) => `(unreadable: ${e.message})`);
          throw new Error(`the page never showed ${needle} in ${timeoutMs} ms (${(err as Error).message}); it shows:\n${shown}\nbrowser log:\n${log.join('\n')}`);
        }
      }
    }
    return { requests, log, waitForText };
  }

  return {
    open,
    close: async () => {
      try {
        await Promise.race([browser.close(), new Promise((r) => setTimeout(r, 5000).unref())]);
      } catch {
      } finally {
        try {
          process.kill(-group, 'SIGKILL');
        } catch {}
      }
    },
  };
}
