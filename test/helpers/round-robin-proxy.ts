/**
 * A small HTTP load balancer on loopback for multi-instance tests: each request
 * goes to the next upstream in turn; an upstream that refuses the connection
 * (a killed instance) is skipped for that request, as nginx's `proxy_next_upstream
 * error` does. Counts what each upstream served.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  url: string;
  /** Requests answered per upstream URL. */
  served: Map<string, number>;
  close(): Promise<void>;
}

export async function startRoundRobinProxy(upstreams: string[]): Promise<RoundRobinProxy> {
  let next = 0;
  const served = new Map<string, number>(upstreams.map((u) => [u, 0]));

  const forward = (req: IncomingMessage, body: Buffer, upstream: string) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const target = new URL(req.url ?? '/', upstream);
      const out = request(
        target,
        {
          method: req.method,
          headers: { ...req.headers, host: target.host, 'x-forwarded-for': '127.0.0.1' },
        },
        resolve,
      );
      out.once('error', reject);
      out.end(body);
    });

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      void (async () => {
        for (let tries = 0; tries < upstreams.length; tries++) {
          const upstream = upstreams[next++ % upstreams.length] ?? '';
          try {
            const answer = await forward(req, body, upstream);
            served.set(upstream, (served.get(upstream) ?? 0) + 1);
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
            return;
          } catch {
            // Connection refused or reset: the next instance takes it.
          }
        }
        res.writeHead(502).end();
      })();
    });
  });
  // Longer than any client's idle keep-alive (undici: 4 s), so the client always closes an idle
  // socket first: a server closing it while a request is being sent makes the client fail it.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
