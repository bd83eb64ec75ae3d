/**
 * A checkpoint directory described by `manifest.json`:
 * `{"files": [{"path": "model.safetensors", "size": 1234}, ...], "step": 120}` (paths relative
 * to the directory). It is complete when every listed file exists with exactly that size, which
 * holds whatever order the writer wrote them in as long as it writes the manifest last.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { describeZodError } from '../job/spec';
import { mapBounded } from './bounded';
import { isTransient } from './errors';
import type { CheckpointInfo, Verdict } from './types';

export const MANIFEST = 'manifest.json';

/** At most this many listed files stated at once (a manifest may list thousands of shards). */
const STAT_CONCURRENCY = 8;

const manifestSchema = z
  .object({
    files: z.array(z.object({ path: z.string().min(1), size: z.number().int().nonnegative() }).passthrough()),
    step: z.number().int().nonnegative().optional(),
  })
  .passthrough();

type ListedFile = z.infer<typeof manifestSchema>['files'][number];

/** Why one listed file does not match, or null when it does. */
async function fileProblem(dir: string, f: ListedFile): Promise<string | null> {
  const full = path.resolve(dir, f.path);
  const rel = path.relative(dir, full);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return `manifest lists a path outside the checkpoint: ${f.path}`;
  try {
    const st = await stat(full);
    if (!st.isFile()) return `${f.path} listed in manifest is not a regular file`;
    if (st.size !== f.size) return `${f.path} has ${st.size} bytes, manifest says ${f.size}`;
    return null;
  } catch (err) {
    if (isTransient(err)) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `${f.path} listed in manifest is missing` : `${f.path} listed in manifest cannot be read (${code})`;
  }
}

export async function inspectManifest(dir: string, base: Omit<CheckpointInfo, 'kind'>): Promise<Verdict> {
  const skip = (reason: string, step = base.step): Verdict => ({ state: 'skipped', entry: { ...base, step, reason } });
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path.join(dir, MANIFEST), 'utf8'));
  } catch (err) {
    if (err instanceof SyntaxError) return skip('manifest is not valid JSON');
    if (isTransient(err)) throw err;
    return skip(`manifest cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) return skip(describeZodError(parsed.error, 'manifest is malformed: '));
  const step = parsed.data.step ?? base.step;
  const problems = await mapBounded(parsed.data.files, STAT_CONCURRENCY, (f) => fileProblem(dir, f));
  const first = problems.find((p) => p !== null);
  if (first) return skip(first, step);
  return { state: 'complete', info: { ...base, step, kind: 'manifest' } };
}

/**
 * The step a directory's manifest declares, or null (no manifest, unreadable, malformed, no
 * step). The scan reads it before ordering: it outranks the name's digits. Transient errors are
 * thrown; a manifest that is not whole is skipped later by inspectManifest anyway.
 */
export async function manifestStep(dir: string): Promise<number | null> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path.join(dir, MANIFEST), 'utf8'));
  } catch (err) {
    if (isTransient(err)) throw err;
    return null;
  }
  const parsed = manifestSchema.safeParse(raw);
  return parsed.success ? (parsed.data.step ?? null) : null;
}
