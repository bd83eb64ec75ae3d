/**
 * The Temporal connection options every command takes, spelled as the `temporal` CLI spells
 * them, with its environment variables: `--address` (TEMPORAL_ADDRESS), `-n/--namespace`
 * (TEMPORAL_NAMESPACE), `--api-key` (TEMPORAL_API_KEY), `--tls`/`--no-tls` (TEMPORAL_TLS),
 * `--tls-cert-path` (TEMPORAL_TLS_CERT), `--tls-key-path` (TEMPORAL_TLS_KEY), `--tls-ca-path`
 * (TEMPORAL_TLS_CA), `--tls-server-name` (TEMPORAL_TLS_SERVER_NAME). A flag beats its variable.
 * telastic adds `--api-key-file` (the key in a file, so that it is not on the command line, where
 * every local user can read it in `ps`) and `--encryption-key-file` (TELASTIC_ENCRYPTION_KEY_FILE): the key files that seal
 * payloads (src/temporal/sealing.ts), `:`-separated like KUBECONFIG; the first seals; and
 * `--accept-unsealed` (TELASTIC_ACCEPT_UNSEALED=1): with a key, still open unsealed payloads.
 * This module only compiles them into `ConnectionOptions` (src/temporal/types.ts);
 * `src/temporal/connect.ts` reads the files and connects.
 */
import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { connectionOptionsSchema, type ConnectionOptions } from '../temporal/types';
import { UsageError } from './errors';
import { envBoolSchema, hostPortSchema, nonEmpty, parseValue, type RawValue } from '../config/values';

export const DEFAULT_ADDRESS = 'localhost:7233';
export const DEFAULT_NAMESPACE = 'default';

export { connectionOptionsSchema, type ConnectionOptions } from '../temporal/types';

/** What commander leaves in `opts()` after `addConnectionOptions`. */
export interface ConnectionFlagValues {
  address?: string;
  namespace?: string;
  tls?: boolean;
  tlsCertPath?: string;
  tlsKeyPath?: string;
  tlsCaPath?: string;
  tlsServerName?: string;
  apiKey?: string;
  apiKeyFile?: string;
  encryptionKeyFile?: string;
  acceptUnsealed?: boolean;
}

const TLS_FLAGS = {
  certPath: '--tls-cert-path',
  keyPath: '--tls-key-path',
  caPath: '--tls-ca-path',
  serverName: '--tls-server-name',
} as const;

/** Add the connection options to a command. No commander defaults or `.env()`: compile decides. */
export function addConnectionOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--address <host:port>', `Temporal frontend (env TEMPORAL_ADDRESS, default ${DEFAULT_ADDRESS})`))
    .addOption(new Option('-n, --namespace <name>', 'Temporal namespace (env TEMPORAL_NAMESPACE, default "default")'))
    .addOption(new Option('--api-key <key>', 'API key; implies TLS (env TEMPORAL_API_KEY; on the command line every local user can read it: prefer the variable or --api-key-file)'))
    .addOption(new Option('--api-key-file <path>', 'read the API key from this file; implies TLS'))
    .addOption(new Option('--tls', 'connect with TLS (env TEMPORAL_TLS)'))
    .addOption(new Option('--no-tls', 'connect without TLS, even with an API key'))
    .addOption(new Option('--tls-cert-path <path>', 'client certificate for mTLS (env TEMPORAL_TLS_CERT)'))
    .addOption(new Option('--tls-key-path <path>', 'client private key for mTLS (env TEMPORAL_TLS_KEY)'))
    .addOption(new Option('--tls-ca-path <path>', 'server CA certificate (env TEMPORAL_TLS_CA)'))
    .addOption(new Option('--tls-server-name <name>', 'override the TLS server name (env TEMPORAL_TLS_SERVER_NAME)'))
    .addOption(new Option('--encryption-key-file <path[:path…]>', 'seal payloads with the base64 256-bit key in this file; more files (:-separated) still unseal (env TELASTIC_ENCRYPTION_KEY_FILE)'))
    .addOption(new Option('--accept-unsealed', 'with a key, still accept payloads that are not sealed (histories from before the key; env TELASTIC_ACCEPT_UNSEALED=1): for the upgrade window only'));
}

/** The flag's value if given, else the non-empty environment variable, each with its source. */
export function flagOrEnv(
  flag: string | undefined,
  flagName: string,
  env: NodeJS.ProcessEnv,
  ...envNames: string[]
): RawValue | undefined {
  if (flag !== undefined) return { raw: flag, from: flagName };
  for (const name of envNames) {
    const raw = env[name];
    if (raw !== undefined && raw !== '') return { raw, from: name };
  }
  return undefined;
}

/**
 * Compile parsed flag values and the environment into `ConnectionOptions`. `address`, when
 * given, replaces the `--address`/TEMPORAL_ADDRESS lookup (`telastic run` resolves it from
 * `--rdzv-endpoint` and PET_RDZV_ENDPOINT too).
 */
export function compileConnectionOptions(
  values: ConnectionFlagValues,
  env: NodeJS.ProcessEnv,
  address: RawValue | undefined = flagOrEnv(values.address, '--address', env, 'TEMPORAL_ADDRESS'),
): ConnectionOptions {
  const str = (v: RawValue | undefined) => (v ? parseValue(nonEmpty, v) : undefined);
  const namespace = str(flagOrEnv(values.namespace, '--namespace', env, 'TEMPORAL_NAMESPACE'));
  if (values.apiKey !== undefined && values.apiKeyFile !== undefined) throw new UsageError('--api-key and --api-key-file: give one of them', '--api-key-file');
  const apiKey = values.apiKeyFile !== undefined ? readApiKeyFile(values.apiKeyFile) : str(flagOrEnv(values.apiKey, '--api-key', env, 'TEMPORAL_API_KEY'));
  const cert = flagOrEnv(values.tlsCertPath, '--tls-cert-path', env, 'TEMPORAL_TLS_CERT');
  const key = flagOrEnv(values.tlsKeyPath, '--tls-key-path', env, 'TEMPORAL_TLS_KEY');
  const settings = {
    certPath: str(cert),
    keyPath: str(key),
    caPath: str(flagOrEnv(values.tlsCaPath, '--tls-ca-path', env, 'TEMPORAL_TLS_CA')),
    serverName: str(flagOrEnv(values.tlsServerName, '--tls-server-name', env, 'TEMPORAL_TLS_SERVER_NAME')),
  };
  const tlsEnv = values.tls === undefined ? flagOrEnv(undefined, '', env, 'TEMPORAL_TLS') : undefined;
  const tlsSwitch = values.tls ?? (tlsEnv ? parseValue(envBoolSchema, tlsEnv) : undefined);

  if (cert && !key) throw UsageError.invalid(cert.from, cert.raw, 'mTLS needs a key too (--tls-key-path)');
  if (key && !cert) throw UsageError.invalid(key.from, key.raw, 'mTLS needs a certificate too (--tls-cert-path)');
  const given = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
  if (tlsSwitch === false && Object.keys(given).length > 0) {
    const field = values.tls === false ? '--no-tls' : 'TEMPORAL_TLS';
    const flags = Object.keys(given).map((k) => TLS_FLAGS[k as keyof typeof settings]);
    const shown = field === '--no-tls' ? field : `${field} ${tlsEnv?.raw}`;
    throw new UsageError(`${shown}: turns TLS off, but ${flags.join(', ')} given`, field, tlsEnv?.raw);
  }
  const wantTls = tlsSwitch ?? (Object.keys(given).length > 0 || apiKey !== undefined ? true : undefined);

  return connectionOptionsSchema.parse({
    address: address ? parseValue(hostPortSchema, address) : DEFAULT_ADDRESS,
    namespace: namespace ?? DEFAULT_NAMESPACE,
    tls: wantTls === undefined ? undefined : wantTls ? given : false,
    apiKey,
    encryptionKeyFiles: compileKeyFiles(values.encryptionKeyFile, env),
    acceptUnsealed: compileAcceptUnsealed(values.acceptUnsealed, env),
  });
}

/** `--accept-unsealed` / TELASTIC_ACCEPT_UNSEALED (1, true, …): absent unless given. */
export function compileAcceptUnsealed(flag: boolean | undefined, env: NodeJS.ProcessEnv): true | undefined {
  if (flag) return true;
  const raw = flagOrEnv(undefined, '', env, 'TELASTIC_ACCEPT_UNSEALED');
  return raw && parseValue(envBoolSchema, raw) ? true : undefined;
}

/** `--encryption-key-file` / TELASTIC_ENCRYPTION_KEY_FILE: `:`-separated key files, the sealing one first. */
export function compileKeyFiles(flag: string | undefined, env: NodeJS.ProcessEnv): ConnectionOptions['encryptionKeyFiles'] {
  const keyFiles = flagOrEnv(flag, '--encryption-key-file', env, 'TELASTIC_ENCRYPTION_KEY_FILE');
  if (!keyFiles) return undefined;
  const paths = keyFiles.raw.split(path.delimiter).filter((p) => p !== '');
  if (paths.length === 0) throw UsageError.invalid(keyFiles.from, keyFiles.raw, 'expected one or more key file paths');
  return { paths, from: keyFiles.from };
}

/** `--api-key-file`: the key is the file's content, without surrounding whitespace (a final newline). */
function readApiKeyFile(file: string): string {
  let key: string;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw UsageError.invalid('--api-key-file', file, code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? String(err)})`);
  }
  if (key === '') throw UsageError.invalid('--api-key-file', file, 'the file is empty');
  return key;
}

/** One line for a long-lived command given `--api-key` itself: its command line shows in `ps`. */
export function apiKeyFlagWarning(values: ConnectionFlagValues): string | null {
  if (values.apiKey === undefined) return null;
  return 'warning: --api-key on the command line can be read by every local user (ps, /proc/PID/cmdline); set TEMPORAL_API_KEY or use --api-key-file instead';
}
