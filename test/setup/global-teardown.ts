/** Stops the shared Temporal dev server started by global-setup.ts and removes the run's TMPDIR. */
import { rmSync } from 'node:fs';
import { addressFile } from './temporal';

export default async function globalTeardown(): Promise<void> {
  rmSync(addressFile(process.pid), { force: true });
  const server = globalThis.__TELASTIC_TEST_TEMPORAL__;
  globalThis.__TELASTIC_TEST_TEMPORAL__ = undefined;
  await server?.stop();
  const tmp = globalThis.__TELASTIC_TEST_TMPDIR__;
  globalThis.__TELASTIC_TEST_TMPDIR__ = undefined;
  if (!tmp) return;
  if (process.env.TELASTIC_TEST_KEEP_TMP === '1') console.log(`the tests' temporary files are kept in ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}
