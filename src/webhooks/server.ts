import Fastify, { LogController } from 'fastify';
import type { Logger } from 'pino';
import { healthRoutes, metricsRoutes, type HealthDeps, type MetricsDeps } from './health.js';
import { mediaWebhookRoutes, problem, type WebhookDeps } from './media-webhook.js';
import { interactionRoutes, type InteractionsDeps } from './interactions.js';
import { photoFileRoutes, type PhotoFilesDeps } from './photo-files.js';

export interface ServerDeps {
  logger: Logger;
  webhook: WebhookDeps;
  health: HealthDeps;
  /** Fastify `trustProxy` (config TRUST_PROXY): which proxies' X-Forwarded-For sets `req.ip`. */
  trustProxy?: TrustProxy;
  /**
   * `/metrics` on this server (default, open unless a token is set), or `false`
   * when it has its own port (METRICS_PORT, see buildMetricsServer).
   */
  metrics?: { token?: string } | false;
  /** DISCORD_INTERACTIONS=http: `POST /interactions`. */
  interactions?: InteractionsDeps;
  /** MEDIA_PHOTO_FORMAT=url: `GET /photos/:token/:file`, the cleaned training photos. */
  photos?: PhotoFilesDeps;
}

export type TrustProxy = boolean | number | string[];

/** A hop count as proxy-addr's own hop rule (Fastify's types only take it as a function). */
function fastifyTrustProxy(t: TrustProxy): boolean | string[] | ((addr: string, hop: number) => boolean) {
  return typeof t === 'number' ? (_addr, hop) => hop < t : t;
}

/** Builds the HTTP app without listening (tests use `app.inject()`). */
export async function buildServer(deps: ServerDeps) {
  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }),
    // Per-request access logs would drown the job logs under a webhook storm.
    logController: new LogController({ disableRequestLogging: true }),
    // No per-request child logger (pino children with redaction are costly under a
    // webhook storm); routes log the job id themselves.
    childLoggerFactory: (logger) => logger,
    bodyLimit: 1024 * 1024,
    trustProxy: fastifyTrustProxy(deps.trustProxy ?? false),
    // Router-level errors (malformed %-encoding, a path parameter over maxParamLength) bypass
    // setErrorHandler: answer them in the same `{error: {code, message}}` shape.
    frameworkErrors: (err, _req, reply) => {
      const body = JSON.stringify(problem(err.code, 'invalid URL'));
      reply.raw.writeHead(err.statusCode ?? 400, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      reply.raw.end(body);
    },
  });
  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status >= 500) req.log.error({ err }, 'request failed');
    // Fastify's own errors (bad JSON 400, body too large 413, wrong content type 415) keep their status.
    // Errors without a code get one from their status, not INTERNAL.
    const code = err.code ?? (status === 429 ? 'RATE_LIMITED' : status >= 500 ? 'INTERNAL' : 'BAD_REQUEST');
    return reply.code(status).send(problem(code, status >= 500 ? 'internal error' : err.message));
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send(problem('NOT_FOUND', 'no such route')));
  await app.register(healthRoutes, deps.health);
  if (deps.metrics !== false) {
    await app.register(metricsRoutes, {
      registry: deps.health.registry,
      ...(deps.metrics?.token !== undefined ? { token: deps.metrics.token } : {}),
    });
  }
  await app.register(mediaWebhookRoutes, deps.webhook);
  if (deps.interactions) await app.register(interactionRoutes, deps.interactions);
  if (deps.photos) await app.register(photoFileRoutes, deps.photos);
  return app;
}

export type HttpServer = Awaited<ReturnType<typeof buildServer>>;

/** `/metrics` alone, for METRICS_PORT: keep it off the public webhook port (e.g. bind it to a private network). */
export async function buildMetricsServer(deps: { logger: Logger } & MetricsDeps) {
  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'metrics-http' }),
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send(problem('NOT_FOUND', 'no such route')));
  await app.register(metricsRoutes, {
    registry: deps.registry,
    ...(deps.token !== undefined ? { token: deps.token } : {}),
  });
  return app;
}
