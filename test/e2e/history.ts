/**
 * A workflow's history as an operator reads it (`temporal workflow show -o json`, with no codec),
 * and what a reader of it could learn: for the sealed-payload tests.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolveTemporalCli } from '../../src/temporal/binary';
import { testAddress } from '../setup/temporal';

const run = promisify(execFile);

/** The current run's history of `workflowId`, as the temporal CLI prints it. */
export async function shownHistory(workflowId: string, address = testAddress()): Promise<{ events: unknown[] }> {
  const cli = await resolveTemporalCli({ install: false });
  const shown = await run(cli, ['workflow', 'show', '-w', workflowId, '-o', 'json', '--address', address], { maxBuffer: 256 * 1024 * 1024 });
  return JSON.parse(shown.stdout) as { events: unknown[] };
}

/** Every string in a JSON value, and the text of every base64 string in it (payload data). */
export function texts(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') {
    out.push(v);
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length % 4 === 0) out.push(Buffer.from(v, 'base64').toString('latin1'));
  } else if (Array.isArray(v)) for (const x of v) texts(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) texts(x, out);
  return out;
}

/**
 * Payloads of a history that are not sealed, as `encoding at path`: none is expected but the
 * search attributes (job state, world size, round, restarts) and the SDK's own patch markers (a
 * patch id such as "final-status-memo").
 */
export function unsealedPayloads(history: unknown): string[] {
  const plain = new Set<string>();
  const walk = (v: unknown, at: string[]): void => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, at));
    if (!v || typeof v !== 'object') return;
    const md = (v as { metadata?: { encoding?: string } }).metadata;
    const encoding = md?.encoding && Buffer.from(md.encoding, 'base64').toString();
    if (encoding && encoding !== 'binary/encrypted' && !at.includes('searchAttributes') && !at.includes('patch-data')) plain.add(`${encoding} at ${at.slice(-3).join('.')}`);
    for (const [k, x] of Object.entries(v)) walk(x, [...at, k]);
  };
  walk(history, []);
  return [...plain];
}
