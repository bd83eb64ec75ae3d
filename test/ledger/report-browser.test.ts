/**
 * The HTML report in a real browser: Debian's chromium, headless, loads the page from a file and
 * dumps the DOM it built (the chart's SVG must be in it, the ledger's `<script>` only as text) and
 * logs no console message at all (the page has no script, so any is a fault); a screenshot is
 * taken too. Skipped, saying why, only when chromium is not installed (scripts/setup.sh installs it).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jobFigures } from '../../src/ledger/figures';
import { reportHtml } from '../../src/ledger/report-html';
import { CHROMIUM } from '../setup/chromium';
import { at, fourRounds } from './timelines';

if (!CHROMIUM) console.warn('report-browser.test.ts: skipped: no chromium on PATH (apt-get install chromium, or run scripts/setup.sh)');
const browserTest = CHROMIUM ? test : test.skip;

let dir: string;
const groups = new Set<number>();

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-browser-'));
});

afterAll(() => {
  for (const pgid of groups) kill(pgid);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs headless chromium on `file` with `args`; its whole process group is killed when it ends or after 60 s. */
function chromium(args: string[], file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(CHROMIUM!, [
    '--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${path.join(dir, 'profile')}`, '--enable-logging=stderr', '--v=0', ...args, `file://${file}`,
  ], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.add(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => kill(child.pid!), 60_000);
  return new Promise((resolve) => child.on('close', (code) => {
    clearTimeout(timer);
    kill(child.pid!); // a helper process (zygote, GPU) must not outlive the browser
    groups.delete(child.pid!);
    resolve({ code, stdout, stderr });
  }));
}

browserTest('chromium renders the report: the SVG chart is in the DOM, user text stays text, no console message', async () => {
  const t = fourRounds();
  t.failures[0]!.message = '<script>console.error("injected")</script>';
  const file = path.join(dir, 'report.html');
  writeFileSync(file, reportHtml(t, jobFigures(t, new Date(at(100))), { now: new Date(at(100)), where: 'DATABASE_URL' }));

  const dom = await chromium(['--dump-dom'], file);
  expect(dom.code).toBe(0);
  expect(dom.stdout).toMatch(/<svg class="chart"[^>]*viewBox="0 0 960 300"/);
  expect(dom.stdout.match(/<circle class="fail"/g)).toHaveLength(2);
  expect(dom.stdout).toContain('&lt;script&gt;console.error("injected")&lt;/script&gt;');
  expect(dom.stdout).not.toMatch(/<script/i);
  expect(dom.stderr.split('\n').filter((l) => /:CONSOLE|Uncaught/.test(l))).toEqual([]);

  const png = path.join(dir, 'report.png');
  const shot = await chromium(['--hide-scrollbars', '--window-size=1200,1300', `--screenshot=${png}`], file);
  expect(shot.code).toBe(0);
  expect(readFileSync(png).subarray(1, 4).toString()).toBe('PNG');
  expect(statSync(png).size).toBeGreaterThan(20_000); // a blank page is a few KB
});

function kill(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {}
}
