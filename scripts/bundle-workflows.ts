/** Build step: prebundle the workflow code so an agent's worker starts in about a second. */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

async function main(): Promise<void> {
  // WARN: webpack's module report ("modules by path ./node_modules/ …") is logged at INFO and is
  // of no use to someone setting up; a failed bundle is still reported, at ERROR.
  // Two bundles: the failure converter is part of workflow code, and a process with a key
  // (TELASTIC_ENCRYPTION_KEY_FILE) seals failure messages too (src/temporal/data-converter.ts).
  const failureConverters = { 'workflow-bundle.js': undefined, 'workflow-bundle-sealed.js': require.resolve('../src/temporal/failure-converter-sealed') };
  for (const [name, failureConverterPath] of Object.entries(failureConverters)) {
    const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), failureConverterPath, logger: new DefaultLogger('WARN') });
    const out = path.join(__dirname, '..', name);
    await writeFile(out, code);
    console.log(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
