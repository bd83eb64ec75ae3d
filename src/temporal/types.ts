/**
 * What a connection to Temporal is made from: the compiled options every command takes
 * (`ConnectionOptions`, compiled from flags and the environment by src/cli/connection-options.ts)
 * and what the SDK's `connect` calls take once the TLS files are read (`ConnectionConfig`,
 * built by connect.ts). Here, below both, so that neither the CLI nor refusal.ts is imported back.
 */
import type { TLSConfig } from '@temporalio/client';
import { z } from 'zod';

export const connectionOptionsSchema = z.object({
  /** Temporal frontend, `host:port`. @default localhost:7233 */
  address: z.string().min(1),
  /** @default "default" */
  namespace: z.string().min(1),
  /**
   * TLS settings; `{}` is TLS with the system's roots. Set by `--tls`, any `--tls-*` option or
   * an API key. `false` only when TLS was turned off explicitly (`--no-tls`, TEMPORAL_TLS=false);
   * absent means plaintext.
   */
  tls: z
    .union([
      z.literal(false),
      z.object({
        certPath: z.string().min(1).optional(),
        keyPath: z.string().min(1).optional(),
        caPath: z.string().min(1).optional(),
        serverName: z.string().min(1).optional(),
      }),
    ])
    .optional(),
  /** Sent as `Authorization: Bearer …`; implies TLS unless TLS is turned off explicitly. */
  apiKey: z.string().min(1).optional(),
  /** Files holding base64 256-bit keys; the first seals payloads, all unseal. Absent: nothing is sealed. */
  encryptionKeyFiles: z
    .object({
      paths: z.array(z.string().min(1)).min(1),
      /** `--encryption-key-file` or `TELASTIC_ENCRYPTION_KEY_FILE`, for messages. */
      from: z.string(),
    })
    .optional(),
  /**
   * With a key, still open payloads that are not sealed, or sealed before seals bound their
   * namespace (`--accept-unsealed`, TELASTIC_ACCEPT_UNSEALED=1): for the upgrade window only.
   */
  acceptUnsealed: z.boolean().optional(),
});
export type ConnectionOptions = z.infer<typeof connectionOptionsSchema>;

/** What both `Connection.connect` and `NativeConnection.connect` take. */
export interface ConnectionConfig {
  address: string;
  /** `false` turns TLS off even with an API key; absent means plaintext unless an API key is set. */
  tls?: TLSConfig | false;
  apiKey?: string;
}
