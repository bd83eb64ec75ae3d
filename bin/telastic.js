#!/usr/bin/env node
'use strict';
// No stack trace reaches the user: anything that escapes the CLI is one line and exit code 1
// (TELASTIC_DEBUG=1 shows the stack). A failed command exits even if an SDK handle is still open.
function fatal(err) {
  const message = err instanceof Error ? err.message : String(err);
  console.error(`telastic: ${message.split('\n')[0]}`);
  if (process.env.TELASTIC_DEBUG) console.error(err);
  process.exit(1);
}
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);
require('../lib/src/cli/main.js')
  .main(process.argv.slice(2))
  .then(() => {
    if (!process.exitCode) return;
    process.stdout.write('', () => process.stderr.write('', () => process.exit()));
  }, fatal);
