/** Build step: prebundle the workflow code so an agent's worker starts in about a second. */
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: undefined });
  const out = path.join(__dirname, '..', 'workflow-bundle.js');
  await writeFile(out, code);
  console.log(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
