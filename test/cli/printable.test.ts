/** Text from workers, submitters and the network reaches a terminal only printable. Pure. */
import { printPool, printStatus } from '../../src/cli/commands';
import { oneLine } from '../../src/cli/main';
import { printable, printableJson, printableLine } from '../../src/printable';
import { printable as ledgerPrintable } from '../../src/ledger/format';
import type { JobStatus } from '../../src/job/status';
import type { PoolState } from '../../src/pool/state';

// Title, clear screen, colours, a C1 CSI, right-to-left override, isolates, a lone CR and a newline.
const HOSTILE = 'a\x1b]0;owned\x07b\x1b[2J\x1b[31mc\x9b1m\u202egnp.exe\u2066d\u2069\u200f\re\nf\tg';
// eslint-disable-next-line no-control-regex -- the characters no output may hold raw
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

test('printable escapes C0 (but tab and newline), DEL, C1 and the bidi controls, and keeps the text', () => {
  expect(printable(HOSTILE)).toBe('a\\x1b]0;owned\\x07b\\x1b[2J\\x1b[31mc\\x9b1m\\u202egnp.exe\\u2066d\\u2069\\u200f\\x0de\nf\tg');
  for (const c of ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u061c', '\u200e', '\u200f', '\x7f', '\x80', '\x00']) {
    expect(printable(c)).not.toMatch(RAW);
  }
  expect(printable('plain ascii, ünïcödé, 日本語 — ok')).toBe('plain ascii, ünïcödé, 日本語 — ok');
  expect(ledgerPrintable).toBe(printable); // the ledger's views share it
});

test('printableLine escapes newlines and tabs too: a value shown inside one line stays one line', () => {
  expect(printableLine('a\nFAKE line\tb')).toBe('a\\x0aFAKE line\\x09b');
});

const status: JobStatus = {
  jobId: 'j', state: 'failed', round: 2, restarts: 1, maxRestarts: 0, minNodes: 1, maxNodes: 1, worldSize: 0,
  nodes: [{ nodeId: 'n1', groupRank: 0, state: 'running', address: `10.0.0.5${HOSTILE}` } as JobStatus['nodes'][number]],
  spares: [],
  lastFailure: { nodeId: 'n1', rank: 0, exitCode: 1, signal: null, message: `boom ${HOSTILE}` },
  checkpoint: { path: `/ck/${HOSTILE}`, step: 1, time: 't' },
  quarantined: [{ nodeId: 'n1', reason: HOSTILE }],
};

test('telastic status: addresses, failure messages, checkpoint paths and reasons carry no raw control, one line each', () => {
  const text = printStatus(status);
  expect(text).not.toMatch(RAW);
  expect(text).toContain('last failure: rank 0 on node n1: exit code 1: boom a\\x1b]0;owned\\x07b');
  // A newline inside a message cannot forge a line of its own.
  expect(text.split('\n').filter((l) => l.startsWith('f'))).toEqual([]);
});

test('telastic pool: addresses and labels carry no raw control', () => {
  const pool = {
    name: 'p', ended: [], jobs: [{ jobId: 'j', minNodes: 1, maxNodes: 1, slots: 1 }],
    nodes: [{ nodeId: 'n1', address: `h${HOSTILE}`, slots: 1, labels: { zone: HOSTILE }, incarnation: 'i', state: 'free', jobId: null, since: 0, heartbeatTimeoutMs: 1 }],
  } as unknown as PoolState;
  const text = printPool(pool);
  expect(text).not.toMatch(RAW);
  expect(text).toContain('ha\\x1b]0;owned');
});

test('error lines: the first line of a message, printable', () => {
  expect(oneLine(new Error(`job failed: ${HOSTILE}`))).toBe('job failed: a\\x1b]0;owned\\x07b\\x1b[2J\\x1b[31mc\\x9b1m\\u202egnp.exe\\u2066d\\u2069\\u200f\\x0de');
});

test('--json output: the same value, with no raw control either', () => {
  const text = printableJson(status);
  expect(text).not.toMatch(RAW);
  expect(JSON.parse(text)).toEqual(status);
});
