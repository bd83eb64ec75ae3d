import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import {
  addConnectionOptions,
  compileConnectionOptions,
  type ConnectionFlagValues,
  type ConnectionOptions,
} from '../../src/cli/connection-options';
import { UsageError } from '../../src/cli/errors';
import { toConnectionConfig } from '../../src/temporal/connect';

/** Parse argv with a command carrying only the connection options, then compile with `env`. */
function compile(argv: string[], env: NodeJS.ProcessEnv = {}): ConnectionOptions {
  const cmd = addConnectionOptions(new Command('status').exitOverride()).parse(argv, { from: 'user' });
  return compileConnectionOptions(cmd.opts<ConnectionFlagValues>(), env);
}

function message(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    compile(argv, env);
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error('expected a UsageError');
}

describe('connection options', () => {
  it('reads the API key from --api-key-file (beating TEMPORAL_API_KEY), without its final newline', () => {
    const dir = mkdtempSync(join(tmpdir(), 'telastic-apikey-'));
    const file = join(dir, 'key');
    writeFileSync(file, 'sk-from-file\n', { mode: 0o600 });
    expect(compile(['--api-key-file', file], { TEMPORAL_API_KEY: 'env-key' })).toMatchObject({ apiKey: 'sk-from-file', tls: {} });
    writeFileSync(join(dir, 'empty'), '\n');
    expect(message(['--api-key-file', join(dir, 'empty')])).toBe(`--api-key-file ${join(dir, 'empty')}: the file is empty`);
    expect(message(['--api-key-file', join(dir, 'nope')])).toBe(`--api-key-file ${join(dir, 'nope')}: no such file`);
    expect(message(['--api-key', 'k', '--api-key-file', file])).toBe('--api-key and --api-key-file: give one of them');
  });

  it('defaults to a plaintext localhost:7233, namespace default', () => {
    expect(compile([])).toEqual({ address: 'localhost:7233', namespace: 'default' });
    expect(compile([]).tls).toBeUndefined();
  });

  it('reads the temporal CLI\'s variables, and flags win', () => {
    const env = {
      TEMPORAL_ADDRESS: 'env:1',
      TEMPORAL_NAMESPACE: 'env-ns',
      TEMPORAL_API_KEY: 'env-key',
      TEMPORAL_TLS_CA: '/env/ca.pem',
      TEMPORAL_TLS_SERVER_NAME: 'env.example',
    };
    expect(compile([], env)).toEqual({
      address: 'env:1',
      namespace: 'env-ns',
      apiKey: 'env-key',
      tls: { caPath: '/env/ca.pem', serverName: 'env.example' },
    });
    expect(
      compile(['--address', 'flag:2', '-n', 'flag-ns', '--api-key', 'flag-key', '--tls-ca-path', '/flag/ca.pem'], env),
    ).toEqual({
      address: 'flag:2',
      namespace: 'flag-ns',
      apiKey: 'flag-key',
      tls: { caPath: '/flag/ca.pem', serverName: 'env.example' },
    });
  });

  it('turns TLS on with --tls, an API key or any TLS file, and off with --no-tls', () => {
    expect(compile(['--tls']).tls).toEqual({});
    expect(compile(['--api-key', 'k']).tls).toEqual({});
    expect(compile(['--tls-cert-path', 'c.pem', '--tls-key-path', 'k.pem']).tls).toEqual({ certPath: 'c.pem', keyPath: 'k.pem' });
    expect(compile([], { TEMPORAL_TLS_CERT: 'c.pem', TEMPORAL_TLS_KEY: 'k.pem' }).tls).toEqual({
      certPath: 'c.pem',
      keyPath: 'k.pem',
    });
    expect(compile(['--no-tls', '--api-key', 'k'])).toEqual({ address: 'localhost:7233', namespace: 'default', apiKey: 'k', tls: false });
    expect(compile([], { TEMPORAL_TLS: 'true' }).tls).toEqual({});
    expect(compile([], { TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' }).tls).toBe(false);
    expect(compile(['--tls'], { TEMPORAL_TLS: 'false' }).tls).toEqual({});
  });

  it('rejects bad input in one line naming the flag or variable', () => {
    expect(message(['--tls-cert-path', 'c.pem'])).toBe('--tls-cert-path c.pem: mTLS needs a key too (--tls-key-path)');
    expect(message([], { TEMPORAL_TLS_KEY: 'k.pem' })).toBe('TEMPORAL_TLS_KEY k.pem: mTLS needs a certificate too (--tls-cert-path)');
    expect(message([], { TEMPORAL_TLS: 'maybe' })).toBe('TEMPORAL_TLS maybe: expected true or false');
    expect(message(['--no-tls', '--tls-ca-path', 'ca.pem'])).toBe('--no-tls: turns TLS off, but --tls-ca-path given');
    expect(message(['--address', 'host:port'])).toBe('--address host:port: expected HOST:PORT');
    expect(message([], { TEMPORAL_ADDRESS: 'a b' })).toBe('TEMPORAL_ADDRESS "a b": expected HOST:PORT');
    expect(message(['--namespace', ''])).toBe('--namespace "": must not be empty');
  });
});

describe('toConnectionConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'telastic-tls-'));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('reads the certificate files into the SDK\'s TLS config', async () => {
    const opts: ConnectionOptions = {
      address: 'cloud:7233',
      namespace: 'ns',
      apiKey: 'k',
      tls: { certPath: file('c.pem', 'CERT'), keyPath: file('k.pem', 'KEY'), caPath: file('ca.pem', 'CA'), serverName: 'sni' },
    };
    const config = await toConnectionConfig(opts);
    expect(config.address).toBe('cloud:7233');
    expect(config.apiKey).toBe('k');
    expect(config.tls && config.tls.serverNameOverride).toBe('sni');
    expect(config.tls && Buffer.from(config.tls.serverRootCACertificate ?? []).toString()).toBe('CA');
    expect(config.tls && Buffer.from(config.tls.clientCertPair?.crt ?? []).toString()).toBe('CERT');
    expect(config.tls && Buffer.from(config.tls.clientCertPair?.key ?? []).toString()).toBe('KEY');
  });

  it('passes plaintext and explicit no-TLS through', async () => {
    expect(await toConnectionConfig({ address: 'a:1', namespace: 'n' })).toEqual({ address: 'a:1' });
    expect(await toConnectionConfig({ address: 'a:1', namespace: 'n', tls: false, apiKey: 'k' })).toEqual({
      address: 'a:1',
      tls: false,
      apiKey: 'k',
    });
  });

  it('says which file it could not read', async () => {
    const missing = join(dir, 'missing.pem');
    await expect(toConnectionConfig({ address: 'a:1', namespace: 'n', tls: { caPath: missing } })).rejects.toThrow(
      `cannot read TLS CA certificate ${missing}: ENOENT`,
    );
  });
});
