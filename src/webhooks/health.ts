import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';

export interface HealthDeps {
  /** Gateway connected and READY. */
  discordReady(): boolean;
  /** Resolves when the store answers. */
  pingStore(): Promise<void>;
  registry: Registry;
  /** Gateway mode with several instances on Redis: whether this instance holds the gateway lease. */
  gateway?: () => 'held' | 'standby';
  /** INSTANCE_ID, shown so a load balancer's health view tells replicas apart. */
  instance?: string;
}

export interface MetricsDeps {
  registry: Registry;
  /** Set: `/metrics` answers 401 unless `Authorization: Bearer <token>` matches. */
  token?: string;
}

/** `/healthz` (process up) and `/readyz` (Discord + store): cheap, open, for load balancers and orchestrators. */
export const healthRoutes: FastifyPluginAsync<HealthDeps> = async (app, deps) => {
  app.get('/healthz', async () => ({ ok: true }));

  app.get('/readyz', async (_req, reply) => {
    // Read together, before the store's await: a lease taken meanwhile must not pair "held" with
    // the standby's readiness (a holder is ready only once its gateway connection is).
    const discord = deps.discordReady();
    const gateway = deps.gateway?.();
    let store = true;
    try {
      await deps.pingStore();
    } catch {
      store = false;
    }
    return reply.code(discord && store ? 200 : 503).send({
      ok: discord && store,
      discord,
      store,
      ...(gateway !== undefined ? { gateway } : {}),
      ...(deps.instance !== undefined ? { instance: deps.instance } : {}),
    });
  });
};

const digest = (s: string) => createHash('sha256').update(s).digest();

/** `/metrics` (Prometheus text), optionally behind a bearer token (compared in constant time). */
export const metricsRoutes: FastifyPluginAsync<MetricsDeps> = async (app, deps) => {
  const expected = deps.token === undefined ? undefined : digest(`Bearer ${deps.token}`);
  app.get('/metrics', async (req, reply) => {
    if (expected !== undefined) {
      const given = req.headers.authorization;
      if (given === undefined || !timingSafeEqual(digest(given), expected)) {
        reply.header('www-authenticate', 'Bearer realm="metrics"');
        return reply.code(401).send({
          error: { code: 'UNAUTHORIZED', message: 'metrics need Authorization: Bearer <METRICS_TOKEN>' },
        });
      }
    }
    reply.header('content-type', deps.registry.contentType);
    return deps.registry.metrics();
  });
};
