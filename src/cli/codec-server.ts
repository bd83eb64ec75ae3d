/**
 * `telastic codec-server [--port 8081] [--ip 127.0.0.1] [--allow-origin URL…]`: serves Temporal's
 * remote codec protocol with the keys of `--encryption-key-file` / TELASTIC_ENCRYPTION_KEY_FILE,
 * so that a Web UI pointed at it shows sealed payloads decoded. Whoever reaches it can read every
 * job's spec: see the README ("Sealed payloads") for where it belongs.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { startCodecServer } from '../temporal/codec-server';
import { readSealingKeys } from '../temporal/data-converter';
import { SealingCodec } from '../temporal/sealing';
import { compileKeyFiles } from './connection-options';
import { UsageError } from './errors';

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError(`not a port: ${value}`);
  return port;
}

function parseOrigin(value: string, previous: string[] = []): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError(`not an http(s) origin: ${value}`);
  return [...previous, url.origin];
}

export function registerCodecServerCommand(program: Command): Command {
  return program
    .command('codec-server')
    .description('decode sealed payloads for the Temporal Web UI (Temporal\'s remote codec protocol)')
    .option('--port <port>', 'port to listen on (0: any free port)', parsePort, 8081)
    .option('--ip <address>', 'address to listen on', '127.0.0.1')
    .option('--allow-origin <url>', 'a Web UI origin allowed to call it from a browser (repeatable), e.g. http://localhost:8233', parseOrigin)
    .addOption(new Option('--encryption-key-file <path[:path…]>', 'key files (env TELASTIC_ENCRYPTION_KEY_FILE); the first encodes'))
    .action(async (o: { port: number; ip: string; allowOrigin?: string[]; encryptionKeyFile?: string }) => {
      const files = compileKeyFiles(o.encryptionKeyFile, process.env);
      if (!files) throw new UsageError('codec-server: no key: give --encryption-key-file or TELASTIC_ENCRYPTION_KEY_FILE', '--encryption-key-file');
      const keys = await readSealingKeys({ encryptionKeyFiles: files });
      const server = await startCodecServer({
        codec: new SealingCodec(keys, { acceptUnsealed: true }), // for reading: older histories shown too
        port: o.port,
        host: o.ip,
        allowOrigins: o.allowOrigin ?? [],
        onError: (line) => console.error(`telastic codec-server: ${line}`),
      });
      console.log(`Codec server: ${server.url} (keys ${keys.map((k) => k.id).join(', ')}; origins ${o.allowOrigin?.join(', ') || 'none: CLI use only'})`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
    });
}
