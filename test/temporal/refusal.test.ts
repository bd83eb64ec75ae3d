/**
 * Refusals that waiting will not change: how they are recognised in the SDK's errors (the shapes
 * and words seen from grpc-js and core against test/setup/tls-proxy.ts), how a failed handshake
 * is named, and that the retry loop gives them up at once. The real handshakes, through a real
 * proxy and both SDK clients, are in test/e2e/tls.test.ts.
 */
import { readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { ServiceError } from '@temporalio/client';
import { TransportError } from '@temporalio/worker';
import { classify } from '../../src/temporal/classify';
import { TemporalRefusedError } from '../../src/temporal/errors';
import { freePort } from '../../src/temporal/ports';
import { credentialsRefused, explained, explainTlsError, plaintextProblem, tlsProblem } from '../../src/temporal/refusal';
import { withRetry } from '../../src/temporal/retry';
import { makeTestCerts } from '../setup/tls-proxy';

function grpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code, details: message.replace(/^\d+ \w+: /, ''), metadata: {} });
}

describe('classify: refused credentials', () => {
  test('UNAUTHENTICATED from grpc-js, wrapped by Connection.connect, and from core', () => {
    const client = new ServiceError('Failed to connect to Temporal server', { cause: grpcError(16, '16 UNAUTHENTICATED: invalid API key') });
    expect(classify(client)).toEqual({ kind: 'refused', code: 'UNAUTHENTICATED', reason: 'UNAUTHENTICATED: invalid API key' });
    const core = new TransportError('Failed to call GetSystemInfo: code: \'The request does not have valid authentication credentials\', message: "missing API key"');
    expect(classify(core)).toEqual({ kind: 'refused', code: 'UNAUTHENTICATED', reason: 'UNAUTHENTICATED: missing API key' });
  });

  test('PERMISSION_DENIED from grpc-js and from core', () => {
    expect(classify(grpcError(7, '7 PERMISSION_DENIED: Request unauthorized.'))).toEqual({ kind: 'refused', code: 'PERMISSION_DENIED', reason: 'PERMISSION_DENIED: Request unauthorized.' });
    const core = new TransportError('Failed to call GetSystemInfo: code: \'The caller does not have permission to execute the specified operation\', message: "Request unauthorized."');
    expect(classify(core)).toEqual({ kind: 'refused', code: 'PERMISSION_DENIED', reason: 'PERMISSION_DENIED: Request unauthorized.' });
    // A NativeConnection's service call (operatorService.listSearchAttributes): the words are the message, details empty.
    const call = Object.assign(new Error('Request unauthorized: /x.OperatorService/ListSearchAttributes'), { code: 7, details: '', metadata: {} });
    expect(classify(call)).toEqual({ kind: 'refused', code: 'PERMISSION_DENIED', reason: 'PERMISSION_DENIED: Request unauthorized: /x.OperatorService/ListSearchAttributes' });
  });

  test('the line depends on whether a key was sent', () => {
    expect(credentialsRefused('UNAUTHENTICATED: invalid API key', 'UNAUTHENTICATED', true)).toBe('the server refused the API key (UNAUTHENTICATED: invalid API key)');
    expect(credentialsRefused('UNAUTHENTICATED: missing', 'UNAUTHENTICATED', false)).toBe('the server wants credentials (UNAUTHENTICATED: missing); give --api-key');
    expect(credentialsRefused('PERMISSION_DENIED: no', 'PERMISSION_DENIED', true)).toBe('the server denied access (PERMISSION_DENIED: no)');
  });

  test('withRetry gives a refusal up at once, without a waiting line; a TemporalRefusedError is never retried', async () => {
    const said: string[] = [];
    let calls = 0;
    const o = { address: 'h:1', patienceMs: 60_000, say: (l: string) => said.push(l), sleep: async () => undefined };
    const err = await withRetry(() => {
      calls += 1;
      return Promise.reject(grpcError(16, '16 UNAUTHENTICATED: bad key'));
    }, o).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemporalRefusedError);
    expect((err as Error).message).toBe('cannot connect to Temporal at h:1: the server refused the call (UNAUTHENTICATED: bad key)');
    const refused = new TemporalRefusedError('h:1', 'TLS handshake failed (x)');
    await expect(withRetry(() => { calls += 1; return Promise.reject(refused); }, o)).rejects.toBe(refused);
    expect(calls).toBe(2);
    expect(said).toEqual([]);
  });
});

describe('naming a failed TLS handshake', () => {
  test.each([
    [{ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', message: 'unable to verify the first certificate' }, "TLS handshake failed: the server's certificate is not trusted (unable to verify the first certificate); give its CA with --tls-ca-path"],
    [{ code: 'SELF_SIGNED_CERT_IN_CHAIN', message: 'self-signed certificate in certificate chain' }, "TLS handshake failed: the server's certificate is not trusted (self-signed certificate in certificate chain); give its CA with --tls-ca-path"],
    [{ code: 'ERR_TLS_CERT_ALTNAME_INVALID', message: "Hostname/IP does not match certificate's altnames: IP: 10.0.0.1 is not in the cert's list: 127.0.0.1" }, "TLS handshake failed: the server's certificate is not for 10.0.0.1 (Hostname/IP does not match certificate's altnames: IP: 10.0.0.1 is not in the cert's list: 127.0.0.1); set --tls-server-name"],
    [{ code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', message: 'C0B7:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:../ssl/record/rec_layer_s3.c:1605:SSL alert number 116' }, 'TLS handshake refused: the server wants a client certificate (mTLS); give --tls-cert-path and --tls-key-path'],
    [{ code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', message: 'C0B7:error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:../ssl/record/rec_layer_s3.c:1605:SSL alert number 48' }, 'TLS handshake refused: the server does not accept the client certificate (tlsv1 alert unknown ca)'],
    [{ code: 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', message: 'C0B7:error:0A000412:SSL routines:ssl3_read_bytes:sslv3 alert bad certificate:../ssl/record/rec_layer_s3.c:1605:SSL alert number 42' }, 'TLS handshake refused: the server does not accept the client certificate (sslv3 alert bad certificate)'],
  ])('%j', (err, line) => {
    expect(explainTlsError(err, '10.0.0.1')).toBe(line);
  });

  test('errors that are not about TLS are left to the retry loop', () => {
    expect(explainTlsError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:7233' }, 'h')).toBeUndefined();
    expect(explainTlsError({ code: 'ECONNRESET', message: 'socket hang up' }, 'h')).toBeUndefined();
  });

  test('a real handshake: a port nobody listens on says nothing; a server that does not speak TLS is named', async () => {
    expect(await tlsProblem({ address: `127.0.0.1:${await freePort()}`, tls: {} })).toBeUndefined();
    const sockets = new Set<net.Socket>();
    const plain = net.createServer((s) => {
      sockets.add(s);
      s.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(plain.address() as net.AddressInfo).port}`;
    try {
      expect(await tlsProblem({ address, tls: {} })).toBe('TLS handshake failed: the server does not speak TLS (wrong version number); connect without the TLS options');
      // Through `explained`: a transient-looking failure over TLS becomes the named refusal.
      const err = await explained({ address, tls: {} }, () => Promise.reject(new Error('Failed to connect before the deadline'))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TemporalRefusedError);
      // Without TLS no handshake is tried: the original error stays, for the retry loop.
      const plainErr = new Error('Failed to connect before the deadline');
      await expect(explained({ address }, () => Promise.reject(plainErr))).rejects.toBe(plainErr);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => plain.close(r));
    }
  });
});

describe('a plaintext client of a server that speaks TLS', () => {
  const SPEAKS_TLS = 'the server speaks TLS and this client does not; connect with --tls (add --tls-ca-path if its certificate is from a private CA)';

  /** A server on a free loopback port, counting the connections it accepted; closed by the caller. */
  async function listening(server: net.Server): Promise<{ address: string; accepted: () => number; close: () => Promise<void> }> {
    let accepted = 0;
    const sockets = new Set<net.Socket>();
    server.on('connection', (s: net.Socket) => {
      accepted += 1;
      sockets.add(s);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      accepted: () => accepted,
      close: async () => {
        for (const s of sockets) s.destroy();
        await new Promise((r) => server.close(r));
      },
    };
  }

  test('a TLS server is named, through explained too; a plaintext server or a closed port says nothing', async () => {
    const certs = makeTestCerts();
    const secure = await listening(tls.createServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert), ALPNProtocols: ['h2'] }));
    const plain = await listening(net.createServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n')));
    try {
      // The certificate is from a CA the client has never seen: the probe trusts any.
      expect(await plaintextProblem(secure.address)).toBe(SPEAKS_TLS);
      const err = await explained({ address: secure.address }, () => Promise.reject(new Error('Failed to connect before the deadline'))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TemporalRefusedError);
      expect((err as Error).message).toBe(`cannot connect to Temporal at ${secure.address}: ${SPEAKS_TLS}`);
      expect(await plaintextProblem(plain.address)).toBeUndefined();
      expect(await plaintextProblem(`127.0.0.1:${await freePort()}`)).toBeUndefined();
    } finally {
      await secure.close();
      await plain.close();
      rmSync(certs.dir, { recursive: true, force: true });
    }
  });

  test('a server that accepts and never answers: one probe times out, and later attempts go unprobed', async () => {
    const hung = await listening(net.createServer(() => undefined));
    try {
      expect(await plaintextProblem(hung.address, 200)).toBeUndefined();
      expect(hung.accepted()).toBe(1);
      const original = new Error('Failed to connect before the deadline');
      // A second probe would hold this attempt for 3 s and open a second connection.
      await expect(explained({ address: hung.address }, () => Promise.reject(original))).rejects.toBe(original);
      await expect(explained({ address: hung.address, tls: {} }, () => Promise.reject(original))).rejects.toBe(original);
      expect(hung.accepted()).toBe(1);
    } finally {
      await hung.close();
    }
  });
});
