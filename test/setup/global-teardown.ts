/** Stops the shared Temporal dev server started by global-setup.ts. */
import { rmSync } from 'node:fs';
import { addressFile } from './temporal';

export default async function globalTeardown(): Promise<void> {
  rmSync(addressFile(process.pid), { force: true });
  const server = globalThis.__TELASTIC_TEST_TEMPORAL__;
  globalThis.__TELASTIC_TEST_TEMPORAL__ = undefined;
  await server?.stop();
}
