/**
 * A sealed job as a person sees it: `telastic dev` with a key, a workflow started with the sealed
 * data converter (no worker needs to run it: its input is in history from the start), and the
 * Temporal Web UI's history page in Debian's chromium, headless. At the Web UI's own address the
 * browser decodes the input through dev's codec server and shows it; at an origin the codec
 * server was not told about (the same UI through a loopback port forward, as a proxy in front of
 * a production UI would be) the codec server refuses the browser, and the page shows the sealed
 * bytes only. Skipped, saying why, only when chromium is not installed (scripts/setup.sh
 * installs it).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { sealedDataConverter } from '../../src/temporal/data-converter';
import { freePort } from '../../src/temporal/ports';
import { spawnFixture, type Child } from './child';
import { CHROMIUM, launchChromium, type Chromium } from './chromium';

if (!CHROMIUM) console.warn('ui-codec-browser.test.ts: skipped: no chromium on PATH (apt-get install chromium, or run scripts/setup.sh)');
const browserTest = CHROMIUM ? test : test.skip;

let dir: string | undefined;
let dev: Child | undefined;
let browser: Chromium | undefined;
let forward: net.Server | undefined;
const forwarded = new Set<net.Socket>();
afterAll(async () => {
  browser?.close();
  // SIGKILL to dev leaves its server the parent-death signal (setpriv); its codec server dies with it.
  if (dev && dev.proc.exitCode === null && dev.proc.signalCode === null) dev.proc.kill('SIGKILL');
  forwarded.forEach((s) => s.destroy());
  if (forward) await new Promise((resolve) => forward!.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

browserTest('the Web UI shows a sealed job\'s input decoded through telastic dev\'s codec server, and sealed to an origin it refuses', async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-uicodec-'));
  const keyFile = path.join(dir, 'job.key');
  writeFileSync(keyFile, randomBytes(32).toString('base64'));
  const [port, uiPort, codecPort] = [await freePort(), await freePort(), await freePort()];
  dev = spawnFixture('telastic-dev.ts', [
    '--port', String(port), '--ui-port', String(uiPort), '--codec-port', String(codecPort),
    '--db', path.join(dir, 't.db'), '--no-controller', '--encryption-key-file', keyFile,
  ]);
  browser = launchChromium(path.join(dir, 'profile'));
  const ui = (await dev.line(/^Web UI: /)).slice('Web UI: '.length);
  const codec = `http://127.0.0.1:${codecPort}`;
  await dev.line(/^Codec server: /);

  // A job whose spec says something secret, sealed before it leaves this process.
  const marker = `secret-${randomBytes(6).toString('hex')}`;
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  let sealedData: string;
  let runId: string;
  try {
    const client = new Client({ connection, dataConverter: await sealedDataConverter([keyFile]) });
    const handle = await client.workflow.start('job', { taskQueue: 'nobody-polls', workflowId: 'sealed-job', args: [{ script: 'train.py', note: marker }] });
    runId = handle.firstExecutionRunId;
    // What the server stores (and a UI without the key shows): sealed bytes, no marker in them.
    const { history } = await connection.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId: 'sealed-job', runId } });
    const [input] = history!.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
    expect(Buffer.from(input!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    expect(Buffer.from(input!.data!).toString('latin1')).not.toContain(marker);
    sealedData = Buffer.from(input!.data!).toString('base64');
  } finally {
    await connection.close();
  }
  const page = `/namespaces/default/workflows/sealed-job/${runId}/history`;

  // At the UI's own origin: the browser posts the input to the codec server and shows it decoded.
  const tab = await browser.open(`${ui}${page}`);
  const shown = await tab.waitForText((text) => text.includes(marker), 40_000);
  expect(shown).toContain('train.py');
  expect(shown).not.toContain(sealedData);
  const decodes = tab.requests.filter((r) => r.method === 'POST' && r.url.startsWith(`${codec}/decode`));
  expect(decodes.length).toBeGreaterThan(0);
  expect(decodes.every((r) => r.status === 200)).toBe(true);

  // The same UI at another origin (a port forward): the codec server refuses the browser's
  // preflight, so the page can only show the sealed bytes, and never the marker.
  forward = net.createServer((socket) => {
    const upstream = net.connect(uiPort, '127.0.0.1');
    for (const s of [socket, upstream]) {
      forwarded.add(s);
      s.on('error', () => s.destroy()).on('close', () => (forwarded.delete(s), socket.destroy(), upstream.destroy()));
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => forward!.listen(0, '127.0.0.1', resolve));
  const other = `http://127.0.0.1:${(forward.address() as net.AddressInfo).port}`;
  const refused = await browser.open(`${other}${page}`);
  const sealed = await refused.waitForText((text) => text.includes(sealedData), 40_000);
  expect(sealed).not.toContain(marker);
  const preflights = refused.requests.filter((r) => r.method === 'OPTIONS' && r.url.startsWith(`${codec}/decode`));
  expect(preflights.length).toBeGreaterThan(0);
  expect(preflights.every((r) => r.status === 403)).toBe(true);
});
