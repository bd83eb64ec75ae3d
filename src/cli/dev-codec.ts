/**
 * `telastic dev`'s codec server, in a child process (codec-server-main.ts): a request that takes
 * memory or time there cannot stall the controller or the ledger in dev's own process. It gets
 * the same key files and the Web UI's origins on its command line (no key on it: the files are
 * read by the child), and it ends with dev: killed by dev on every way out, and by the kernel
 * (`setpriv --pdeathsig`, as the Temporal server) when dev itself is killed.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';

export interface CodecChild {
  /** `http://host:port`, as the child printed it. */
  readonly url: string;
  readonly pid: number;
  /** Exit code, or null when ended by a signal. */
  readonly exited: Promise<number | null>;
  /** Kills it (it keeps nothing worth a graceful stop) and waits until it is gone. */
  stop(): Promise<void>;
}

export interface CodecChildOptions {
  keyFiles: readonly string[];
  port: number;
  host: string;
  allowOrigins: readonly string[];
  /** Each line the child writes to stderr (its errors, already prefixed `telastic codec-server:`). */
  onLog: (line: string) => void;
  /** @default 60_000 (transpiling from sources on a loaded 2-core machine takes a while) */
  startTimeoutMs?: number;
}

const SETPRIV = '/usr/bin/setpriv';

/**
 * How to run the child: codec-server-main.js beside this file in the build, or, from TypeScript
 * sources (tests, development), codec-server-main.ts with each .ts transpiled as it is required.
 */
function entry(): string[] {
  const js = path.join(__dirname, 'codec-server-main.js');
  if (existsSync(js)) return [js];
  const ts = path.join(__dirname, 'codec-server-main.ts');
  // `node -e CODE a b` sees process.argv = [node, a, b], as `node main.js b` would.
  const load = `const ts = require(require.resolve('typescript', { paths: [${JSON.stringify(__dirname)}] }));
    const fs = require('fs');
    require.extensions['.ts'] = (m, file) => m._compile(ts.transpileModule(fs.readFileSync(file, 'utf8'), { fileName: file, compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } }).outputText, file);
    require(process.argv[1]);`;
  return ['-e', load, ts];
}

/** Starts the child and resolves once it listens; rejects with its last line if it exits first. */
export async function startCodecChild(o: CodecChildOptions): Promise<CodecChild> {
  const args = [
    ...entry(), '--port', String(o.port), '--ip', o.host,
    '--encryption-key-file', o.keyFiles.map((f) => path.resolve(f)).join(path.delimiter),
    ...o.allowOrigins.flatMap((origin) => ['--allow-origin', origin]),
  ];
  const withPdeathsig = existsSync(SETPRIV);
  const command = withPdeathsig ? [SETPRIV, '--pdeathsig', 'KILL', '--', process.execPath, ...args] : [process.execPath, ...args];
  // Its own process group: a terminal's Ctrl-C reaches dev, which stops it.
  const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: withPdeathsig, env: process.env });
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    // 'close' rather than 'exit': its last stderr line is in by then.
    child.once('close', (code) => resolve(code));
  });
  let last = '';
  lines(child.stderr, (line) => {
    last = line;
    o.onLog(line);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the codec server did not start within ${o.startTimeoutMs ?? 60_000} ms`)), o.startTimeoutMs ?? 60_000);
    lines(child.stdout, (line) => {
      const m = /^Codec server: (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the codec server exited before it listened (code ${code})${last ? `: ${last}` : ''}`));
    });
  }).catch(async (err: unknown) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  });
  return {
    url,
    pid: child.pid as number,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const all = (partial + chunk).split('\n');
    partial = all.pop() ?? '';
    all.forEach(onLine);
  });
}
