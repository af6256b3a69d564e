import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';

export interface HealthDeps {
  /** Gateway connected and READY. */
  discordReady(): boolean;
  /** Resolves when the store answers. */
  pingStore(): Promise<void>;
  registry: Registry;
}

/** `/healthz` (process up), `/readyz` (Discord + store), `/metrics` (Prometheus text). */
export const healthRoutes: FastifyPluginAsync<HealthDeps> = async (app, deps) => {
  app.get('/healthz', async () => ({ ok: true }));

  app.get('/readyz', async (_req, reply) => {
    const discord = deps.discordReady();
    let store = true;
    try {
      await deps.pingStore();
    } catch {
      store = false;
    }
    return reply.code(discord && store ? 200 : 503).send({ ok: discord && store, discord, store });
  });

  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', deps.registry.contentType);
    return deps.registry.metrics();
  });
};
