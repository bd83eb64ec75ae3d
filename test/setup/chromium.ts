/** Debian's chromium on PATH, or null when it is not installed, for a browser test to skip on. */
import { existsSync } from 'node:fs';
import * as path from 'node:path';

export const CHROMIUM = ['chromium', 'chromium-browser'].map(onPath).find((p): p is string => p !== null) ?? null;

function onPath(name: string): string | null {
  for (const d of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(d, name);
    if (d && existsSync(p)) return p;
  }
  return null;
}
