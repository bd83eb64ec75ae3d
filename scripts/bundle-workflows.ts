/** Build step: prebundle the workflow code so an agent's worker starts in about a second. */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

async function main(): Promise<void> {
  // WARN: webpack's module report ("modules by path ./node_modules/ …") is logged at INFO and is
  // of no use to someone setting up; a failed bundle is still reported, at ERROR.
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') });
  const out = path.join(__dirname, '..', 'workflow-bundle.js');
  await writeFile(out, code);
  console.log(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
