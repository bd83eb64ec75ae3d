/**
 * A TCP proxy that delivers every write of its clients in two pieces, 1 ms apart, as a network may
 * cut a stream anywhere: a server behind it sees other connections' messages in between.
 */
import * as net from 'node:net';

export interface ChopProxy {
  port: number;
  close(): Promise<void>;
}

export function chopProxy(upstream: net.NetConnectOpts): Promise<ChopProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.connect(upstream);
    for (const s of [client, up]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('error', () => undefined);
      s.on('close', () => {
        client.destroy();
        up.destroy();
      });
    }
    let sent = Promise.resolve();
    client.on('data', (chunk) => {
      const half = Math.ceil(chunk.length / 2);
      sent = sent.then(async () => {
        up.write(chunk.subarray(0, half));
        await new Promise((resolve) => setTimeout(resolve, 1));
        up.write(chunk.subarray(half));
      });
    });
    up.pipe(client);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const s of sockets) s.destroy();
          }),
      }),
    ),
  );
}
