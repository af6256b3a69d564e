import { request, Agent } from 'node:http';
import Fastify from 'fastify';

/** How many short-lived requests the warm-up sends, four at a time (about 0.2-0.5 s on 2 cores). */
const HTTP_WARMUP_REQUESTS = 600;
const CONCURRENCY = 4;
/** The warm-up never holds the start longer than this. */
const TIMEOUT_MS = 3000;
const BODY = JSON.stringify({ task_id: 'warm-up', status: 'processing', percentage: 1 });

/**
 * Sends a few hundred short-lived requests through a private loopback server before
 * the bot's first burst, so V8 decides, once and for good, not to pretenure Node's
 * HTTP objects.
 *
 * Why: V8 decides per allocation site whether the site's objects are allocated in
 * the old generation, in a scavenge where at least 100 were made since the last one
 * and the young generation is at its limit (4 MiB semi-spaces, `scripts/start.sh`):
 * "tenure" when 85 % of them survived, else "don't tenure". Either decision holds
 * for the life of the process. Left alone, the bot's first burst (a storm of
 * commands: a hundred callbacks and their response streams alive at once) decided
 * "tenure" for sites that Node's HTTP server uses for every request. From then on
 * each webhook's request and response objects stayed alive, referenced from
 * old-generation objects, until the next full GC: 3.1 KB promoted per request, the
 * bare handler none, and scavenges twice as long. Requests that die young decide
 * "don't tenure" first: 0.5–0.8 KB per request afterwards, on Node 20 and 24
 * (docs/performance.md, issue 35, seventh session). It must run once the young
 * generation has grown to its limit (main.ts: after the app is built): in a
 * smaller one, fewer than 100 objects of a site are made between two scavenges
 * and V8 decides nothing.
 *
 * The server is its own Fastify instance: nothing reaches the bot's routes,
 * metrics or failed-authentication counts. It is best effort: a failure leaves
 * the start as it was.
 */
export async function warmHttpPath(
  opts: { requests?: number; timeoutMs?: number } = {},
): Promise<{ requests: number; ms: number }> {
  const started = Date.now();
  const total = opts.requests ?? HTTP_WARMUP_REQUESTS;
  const deadline = started + (opts.timeoutMs ?? TIMEOUT_MS);
  const app = Fastify({ logger: false });
  // Read the body as the webhook route does (a buffer, any content type).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.post('/warm-up', (_req, reply) => reply.code(202).type('application/json').send('{"ok":true}'));
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let sent = 0;
  try {
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const one = () =>
      new Promise<void>((resolve, reject) => {
        const req = request(
          `${base}/warm-up`,
          { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.once('end', resolve);
            res.once('error', reject);
          },
        );
        req.once('error', reject);
        // No request outlives the limit either (the start never waits on the warm-up): past
        // it, the request is dropped and the warm-up ends (its error then settles nothing).
        req.setTimeout(Math.max(1, deadline - Date.now()), () => {
          req.destroy();
          resolve();
        });
        req.end(BODY);
      });
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < total && Date.now() < deadline) {
          sent++;
          await one();
        }
      }),
    );
  } finally {
    agent.destroy();
    await app.close();
  }
  return { requests: sent, ms: Date.now() - started };
}
