#!/usr/bin/env node
'use strict';
// No stack trace reaches the user: anything that escapes the CLI is one line and exit code 1
// (TELASTIC_DEBUG=1 shows the stack). A failed command exits even if an SDK handle is still open.
function fatal(err) {
  const message = err instanceof Error ? err.message : String(err);
  // Printable: a message may quote a worker or a server (src/printable.ts, inlined: lib may not load).
  // eslint-disable-next-line no-control-regex
  const line = message.split('\n')[0].replace(/[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  console.error(`telastic: ${line}`);
  if (process.env.TELASTIC_DEBUG) console.error(err);
  process.exit(1);
}
// grpc-js sends an IP address as the TLS server name (SNI) when connecting to one, and Node
// warns about that on stderr (DEP0123) the first time: noise in front of telastic's own line,
// and nothing the user can change. Every other warning is shown as usual.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const code = typeof rest[0] === 'object' && rest[0] !== null ? rest[0].code : rest[1];
  if (code === 'DEP0123') return;
  return emitWarning.call(process, warning, ...rest);
};
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);
require('../lib/src/cli/main.js')
  .main(process.argv.slice(2))
  .then(() => {
    if (!process.exitCode) return;
    process.stdout.write('', () => process.stderr.write('', () => process.exit()));
  }, fatal);
