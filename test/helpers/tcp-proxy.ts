/**
 * A TCP relay on loopback in front of one server (e.g. Redis), which a test can cut off:
 * `blackHole()` keeps every connection open but forwards nothing either way and accepts
 * new ones without forwarding (what a network partition looks like: no reset, no answer);
 * `restore()` drops the held connections (as the partition's end makes their peers
 * time out) and forwards new ones again.
 */
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  url(scheme: string): string;
  blackHole(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let cut = false;
  const pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();
  const server = createServer((client) => {
    const pair: { client: Socket; upstream: Socket | undefined } = { client, upstream: undefined };
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      pair.upstream?.destroy();
    };
    client.on('error', end).on('close', end);
    if (cut) return; // held, silent
    const upstream = createConnection(target);
    pair.upstream = upstream;
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => {
      if (!cut) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!cut) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (scheme) => `${scheme}://127.0.0.1:${port}`,
    blackHole: () => {
      cut = true;
    },
    restore: () => {
      cut = false;
      for (const p of [...pairs]) {
        p.client.destroy();
        p.upstream?.destroy();
      }
      pairs.clear();
    },
    close: async () => {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
