/**
 * A TLS-terminating gRPC proxy in front of a plaintext Temporal dev server, and the test
 * certificates it needs, so that telastic's `--tls*` and `--api-key` options meet a real TLS
 * handshake (both SDK clients: @grpc/grpc-js in `Connection`, Rust core/tonic in
 * `NativeConnection`).
 *
 * It proxies at the HTTP/2 level (node:http2 in, node:http2 out), not bytes, because checking an
 * API key means reading each request's `authorization` header. Every stream is forwarded with its
 * headers, body and trailers (gRPC's status travels in the trailers), both ways, with
 * backpressure; a reset on either side resets the other; long polls stay open as long as the
 * server holds them (no idle timeout). A request without the expected key is answered as Temporal
 * Cloud does, with gRPC status UNAUTHENTICATED (16) in a trailers-only response; a denied method
 * (`deny`) with PERMISSION_DENIED (7), as an authorizer does.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';

/** PEM files made by `makeTestCerts`. */
export interface TestCerts {
  dir: string;
  /** The CA that signed the server and client certificates. */
  caCert: string;
  /** For 127.0.0.1 and localhost (subjectAltName). */
  serverCert: string;
  serverKey: string;
  /** A client certificate from `caCert`. */
  clientCert: string;
  clientKey: string;
  /** A second, unrelated CA, and a client certificate it signed. */
  otherCaCert: string;
  otherClientCert: string;
  otherClientKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA `name` (self-signed, 1 day). */
function makeCa(dir: string, name: string): void {
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=telastic test ${name}`, '-keyout', `${name}.key`, '-out', `${name}.crt`]);
}

/** A certificate `name` signed by CA `ca`, with the extensions given. */
function makeLeaf(dir: string, name: string, ca: string, cn: string, ext: string): void {
  writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${cn}`, '-keyout', `${name}.key`, '-out', `${name}.csr`]);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
}

/** A test CA, a server certificate, a client certificate, and a client certificate from another CA (openssl CLI). */
export function makeTestCerts(dir = mkdtempSync(path.join(os.tmpdir(), 'telastic-certs-'))): TestCerts {
  makeCa(dir, 'ca');
  makeCa(dir, 'other-ca');
  makeLeaf(dir, 'server', 'ca', 'localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  makeLeaf(dir, 'client', 'ca', 'telastic-client', 'extendedKeyUsage=clientAuth\n');
  makeLeaf(dir, 'other-client', 'other-ca', 'telastic-other-client', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string) => path.join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    otherCaCert: p('other-ca.crt'),
    otherClientCert: p('other-client.crt'),
    otherClientKey: p('other-client.key'),
  };
}

export interface TlsProxyOptions {
  /** The plaintext Temporal frontend, `host:port`. */
  target: string;
  certs: TestCerts;
  /** mTLS: refuse a client without a certificate from `certs.caCert`. */
  requireClientCert?: boolean;
  /** Refuse (UNAUTHENTICATED) every request whose `authorization` is not `Bearer <apiKey>`. */
  apiKey?: string;
  /**
   * Refuse (PERMISSION_DENIED) every request whose gRPC method (`/pkg.Service/Method`) matches, as
   * a server's authorizer does for a caller it lets in but not to do that.
   */
  deny?: RegExp;
}

export interface TlsProxy {
  /** `127.0.0.1:PORT`, a free port picked by the system. */
  address: string;
  /** The `authorization` header of every request seen, in order (to check what clients send). */
  authorizations: (string | undefined)[];
  /** Requests refused for their API key. */
  refused: number;
  close(): Promise<void>;
}

/** Hop-by-hop and pseudo headers a proxy must not copy as they are. */
const DROP = new Set([':status', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'http2-settings', 'proxy-connection']);

function copyHeaders(h: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) if (!DROP.has(k) && v !== undefined) out[k] = v;
  return out;
}

export async function startTlsProxy(o: TlsProxyOptions): Promise<TlsProxy> {
  const mtls = o.requireClientCert ?? false;
  const server = http2.createSecureServer({
    key: readFileSync(o.certs.serverKey),
    cert: readFileSync(o.certs.serverCert),
    ...(mtls ? { ca: readFileSync(o.certs.caCert), requestCert: true, rejectUnauthorized: true } : {}),
    ALPNProtocols: ['h2'],
  });
  const proxy: TlsProxy = { address: '', authorizations: [], refused: 0, close: async () => undefined };
  const sessions = new Set<http2.Http2Session>();

  server.on('session', (down: http2.ServerHttp2Session) => {
    sessions.add(down);
    down.on('close', () => sessions.delete(down));
    down.on('error', () => undefined);
  });
  server.on('stream', (stream, headers) => {
    const auth = headers.authorization;
    proxy.authorizations.push(auth);
    if (o.apiKey !== undefined && auth !== `Bearer ${o.apiKey}`) {
      proxy.refused += 1;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': auth ? 'invalid API key' : 'missing API key' }, { endStream: true });
      return;
    }
    if (o.deny?.test(String(headers[':path']))) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '7', 'grpc-message': `Request unauthorized: ${String(headers[':path'])}` }, { endStream: true });
      return;
    }
    forward(stream, headers, upstreamFor(stream.session as http2.ServerHttp2Session));
  });

  // One upstream connection per downstream one, closed with it.
  const upstreams = new WeakMap<http2.Http2Session, http2.ClientHttp2Session>();
  function upstreamFor(down: http2.ServerHttp2Session): http2.ClientHttp2Session {
    let up = upstreams.get(down);
    if (!up || up.destroyed || up.closed) {
      up = http2.connect(`http://${o.target}`);
      const u = up;
      sessions.add(u);
      u.on('error', () => down.destroy());
      u.on('close', () => sessions.delete(u));
      down.once('close', () => u.destroy());
      upstreams.set(down, u);
    }
    return up;
  }

  server.on('tlsClientError', () => { /* a refused handshake: the client hears the alert */ });
  server.on('sessionError', () => { /* a session torn down by its client */ });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  proxy.address = `127.0.0.1:${port}`;
  proxy.close = async () => {
    for (const s of sessions) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return proxy;
}

/** Forward one gRPC stream: headers, body and trailers, and resets, both ways. */
function forward(down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, up: http2.ClientHttp2Session): void {
  const out = { ...copyHeaders(headers), ':scheme': 'http' };
  const req = up.request(out, { endStream: false });
  let trailers: http2.OutgoingHttpHeaders | undefined;
  req.on('response', (h, flags) => {
    if (down.destroyed) return;
    // A trailers-only response (an error straight away) ends the stream with its headers.
    const ended = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
    down.respond({ ...copyHeaders(h), ':status': h[':status'] ?? 200 }, ended ? { endStream: true } : { waitForTrailers: true });
    if (!ended) req.pipe(down);
  });
  req.on('trailers', (t) => (trailers = copyHeaders(t)));
  down.on('wantTrailers', () => down.sendTrailers(trailers ?? { 'grpc-status': '14', 'grpc-message': 'proxy: upstream ended without trailers' }));
  down.pipe(req);
  req.on('close', () => {
    if (!down.destroyed && !down.headersSent) down.close(req.rstCode ?? http2.constants.NGHTTP2_INTERNAL_ERROR);
    else if (!down.destroyed && req.rstCode && req.rstCode !== http2.constants.NGHTTP2_NO_ERROR) down.close(req.rstCode);
  });
  down.on('close', () => {
    if (!req.destroyed) req.close(down.rstCode ?? http2.constants.NGHTTP2_CANCEL);
  });
  req.on('error', () => undefined);
  down.on('error', () => undefined);
}
