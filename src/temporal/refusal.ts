/**
 * Name a refusal that waiting will not change, in one line a user can act on: credentials
 * refused (UNAUTHENTICATED, PERMISSION_DENIED) or a TLS handshake that failed.
 *
 * The SDK clients do not say why a TLS connection failed: grpc-js reports only "Failed to connect
 * before the deadline" (and retries), and core reports a server's refusal of our client
 * certificate as a broken pipe, which looks like a server restarting. So after a failed
 * connection attempt over TLS, telastic makes one handshake of its own with the same settings
 * (Node's `tls`, ALPN h2) and waits for the server's first HTTP/2 frame: a TLS 1.3 server refuses
 * a client certificate only after the client's side of the handshake is done.
 *
 * Without TLS the mistake is the other way round: a plaintext client of a TLS server (Temporal
 * Cloud, a production frontend) sees only "Failed to connect before the deadline", like an outage,
 * and would wait for ever. So after a failed plaintext attempt telastic tries one TLS handshake,
 * trusting any certificate: when it succeeds, the server speaks TLS and the line says so.
 *
 * A probe costs nothing against a closed port, but up to PROBE_TIMEOUT_MS against a server that
 * accepts connections and never answers (stopped, overloaded); after such a timeout, attempts to
 * that address go unprobed for HUNG_PAUSE_MS, so a long outage is not slowed by probes.
 */
import { isIP } from 'node:net';
import tls from 'node:tls';
import { classify } from './classify';
import type { ConnectionConfig } from './types';
import { TemporalRefusedError } from './errors';

/** How long our own handshake may take; past it we cannot tell, and the caller waits as before. */
const PROBE_TIMEOUT_MS = 3_000;
/** After a probe timed out, how long further attempts to that address go unprobed. */
const HUNG_PAUSE_MS = 60_000;
/** Addresses whose last probe timed out, and when. */
const hungAt = new Map<string, number>();

/** Node's certificate verification codes that mean "the server's certificate is not trusted". */
const UNTRUSTED = /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_UNTRUSTED|CERT_REJECTED|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|CERT_SIGNATURE_FAILURE|INVALID_CA)$/;
/** TLS alerts a server sends when it does not accept our client certificate. */
const CLIENT_CERT_REFUSED = /alert (unknown ca|bad certificate|certificate unknown|unsupported certificate|certificate revoked|certificate expired|access denied|decrypt error)/;

/** OpenSSL's reason in its message (`…:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:…`), or the message. */
function alertOf(message: string): string {
  return /SSL routines:[^:]*:([^:]+)/.exec(message)?.[1] ?? message.split('\n')[0];
}

/**
 * Why a TLS handshake failed, from the error Node's `tls` gave it; undefined when the error is
 * not about TLS (a refused or unreachable port: the server may be starting).
 */
export function explainTlsError(err: { code?: unknown; message?: unknown }, host: string): string | undefined {
  const code = typeof err.code === 'string' ? err.code : '';
  const message = typeof err.message === 'string' ? err.message : '';
  if (UNTRUSTED.test(code)) return `TLS handshake failed: the server's certificate is not trusted (${message}); give its CA with --tls-ca-path`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `TLS handshake failed: the server's certificate is not for ${host} (${message}); set --tls-server-name`;
  if (/alert certificate required/.test(message) || code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED') {
    return 'TLS handshake refused: the server wants a client certificate (mTLS); give --tls-cert-path and --tls-key-path';
  }
  if (CLIENT_CERT_REFUSED.test(message)) return `TLS handshake refused: the server does not accept the client certificate (${alertOf(message)})`;
  if (/wrong version number|packet length too long|http request/i.test(message)) return `TLS handshake failed: the server does not speak TLS (${alertOf(message)}); connect without the TLS options`;
  if (/^ERR_SSL_|^ERR_TLS_/.test(code) || /SSL routines/.test(message)) return `TLS handshake failed (${alertOf(message)})`;
  return undefined;
}

const CLIENT_CERT_HUNG_UP = 'TLS handshake refused: the server hung up right after the handshake, before any HTTP/2 (it does not accept the client certificate)';

/** `host` and `port` of `host:port` or `[v6]:port`. */
function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(i + 1)) };
}

function pem(b: Uint8Array | undefined): Buffer | undefined {
  return b && Buffer.from(b);
}

/** One TLS handshake with `config`'s settings; why it failed, or undefined (it worked, or we cannot tell). */
export function tlsProblem(config: ConnectionConfig, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  const settings = config.tls || {};
  const { host, port } = splitAddress(config.address);
  const servername = settings.serverNameOverride ?? (isIP(host) ? undefined : host);
  const cert = pem(settings.clientCertPair?.crt);
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      servername,
      ca: pem(settings.serverRootCACertificate),
      cert,
      key: pem(settings.clientCertPair?.key),
      ALPNProtocols: ['h2'],
    });
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => {
      hungAt.set(config.address, Date.now());
      done(undefined);
    }, timeoutMs);
    let secured = false;
    socket.on('error', (err) => done(explainTlsError(err, servername ?? host)));
    // The client preface and an empty SETTINGS frame; the server's SETTINGS says it took us.
    socket.on('secureConnect', () => {
      secured = true;
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    });
    socket.on('data', () => done(undefined));
    // Some servers (Node's own, with rejectUnauthorized) refuse a client certificate by hanging
    // up after the handshake, without an alert. Without a certificate a hang-up says nothing.
    socket.on('close', () => done(secured && cert ? CLIENT_CERT_HUNG_UP : undefined));
  });
}

const SPEAKS_TLS = 'the server speaks TLS and this client does not; connect with --tls (add --tls-ca-path if its certificate is from a private CA)';

/**
 * Whether a server we tried without TLS speaks TLS: one handshake that trusts any certificate.
 * The line to say so, or undefined (it does not, or we cannot tell).
 */
export function plaintextProblem(address: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  const { host, port } = splitAddress(address);
  return new Promise((resolve) => {
    const socket = tls.connect({ host, port, servername: isIP(host) ? undefined : host, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => {
      hungAt.set(address, Date.now());
      done(undefined);
    }, timeoutMs);
    socket.on('secureConnect', () => done(SPEAKS_TLS));
    socket.on('error', () => done(undefined));
    socket.on('close', () => done(undefined));
  });
}

/** Whether a probe of `address` may run now: not while it recently timed out there. */
function mayProbe(address: string, now = Date.now()): boolean {
  const at = hungAt.get(address);
  return at === undefined || now - at >= HUNG_PAUSE_MS;
}

/** The line for credentials the server refused; `apiKey` says whether we sent one. */
export function credentialsRefused(reason: string, code: 'UNAUTHENTICATED' | 'PERMISSION_DENIED', apiKey: boolean): string {
  if (code === 'PERMISSION_DENIED') return `the server denied access (${reason})`;
  return apiKey ? `the server refused the API key (${reason})` : `the server wants credentials (${reason}); give --api-key`;
}

/**
 * Run one connection attempt; when it fails with a refusal we can name, throw a
 * `TemporalRefusedError` (never retried) instead of the SDK's error.
 */
export async function explained<T>(config: ConnectionConfig, attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    const v = classify(err);
    if (v.kind === 'refused') throw new TemporalRefusedError(config.address, credentialsRefused(v.reason, v.code, config.apiKey !== undefined), { cause: err });
    // The SDK turns TLS on for an API key unless told `tls: false`.
    const usesTls = config.tls ? true : config.tls === undefined && config.apiKey !== undefined;
    if (v.kind !== 'namespace' && mayProbe(config.address)) {
      const problem = usesTls ? await tlsProblem(config) : await plaintextProblem(config.address);
      if (problem) throw new TemporalRefusedError(config.address, problem, { cause: err });
    }
    throw err;
  }
}
