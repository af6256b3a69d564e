import Fastify, { LogController } from 'fastify';
import ipaddr from 'ipaddr.js';
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
  /** Connection time limits (default HTTP_TIMEOUTS; tests shorten them). */
  timeouts?: Readonly<HttpTimeouts>;
}

export type TrustProxy = boolean | number | string[];

/** A hop count as proxy-addr's own hop rule (Fastify's types only take it as a function). */
function fastifyTrustProxy(t: TrustProxy): boolean | string[] | ((addr: string, hop: number) => boolean) {
  return typeof t === 'number' ? (_addr, hop) => hop < t : t;
}

/**
 * Time limits of every HTTP connection, so a client that trickles its headers or body,
 * or idles, holds no socket for long. Real senders (the service, Discord, a proxy in
 * front that buffers bodies) send a request at once; no route answers slowly (an
 * HTTP interaction is held at most ~3 s).
 */
export const HTTP_TIMEOUTS: Readonly<HttpTimeouts> = {
  /** The headers must arrive within this (slowloris). */
  headersMs: 10_000,
  /** The whole request, 1 MiB body included (Node: `requestTimeout`). */
  requestMs: 30_000,
  /** A socket silent this long in the middle of a request is closed (Node: `server.setTimeout`). */
  connectionMs: 30_000,
  /**
   * An idle keep-alive socket is closed after this: above the 60 s idle timeout of the
   * usual balancers (nginx upstream keepalive, AWS ALB), so they close first and never
   * reuse a socket the bot is closing.
   */
  keepAliveMs: 65_000,
  /** How often Node checks the first two (default 30 s would double them). */
  checkEveryMs: 5_000,
};

export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  connectionMs: number;
  keepAliveMs: number;
  checkEveryMs: number;
}

/** The Fastify options that apply `t`. */
function timeoutOptions(t: Readonly<HttpTimeouts>) {
  return {
    requestTimeout: t.requestMs,
    connectionTimeout: t.connectionMs,
    keepAliveTimeout: t.keepAliveMs,
    http: {
      headersTimeout: t.headersMs,
      requestTimeout: t.requestMs,
      connectionsCheckingInterval: t.checkEveryMs,
    },
  };
}

/** Whether `host` (HOST) binds loopback only: `localhost`, 127.0.0.0/8, ::1. `0.0.0.0`, `::` and names are public. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (!ipaddr.isValid(host)) return false;
  return ipaddr.process(host).range() === 'loopback';
}

/**
 * The start-up warning when `/metrics` answers anyone (no METRICS_TOKEN) on an address
 * others can reach (METRICS_PORT listens on HOST too); undefined when it does not.
 */
export function openMetricsWarning(config: {
  http: { host: string };
  metrics: { port?: number; token?: string };
}): string | undefined {
  if (config.metrics.token !== undefined || isLoopbackHost(config.http.host)) return undefined;
  const where = config.metrics.port !== undefined ? `port ${config.metrics.port}` : 'the main port';
  return `/metrics is open to anyone who reaches ${config.http.host} (${where}): set METRICS_TOKEN, or keep that port off public networks`;
}

/** Builds the HTTP app without listening (tests use `app.inject()`). */
export async function buildServer(deps: ServerDeps) {
  const app = Fastify({
    ...timeoutOptions(deps.timeouts ?? HTTP_TIMEOUTS),
    loggerInstance: deps.logger.child({ component: 'http' }),
    // Per-request access logs would drown the job logs under a webhook storm.
    logController: new LogController({ disableRequestLogging: true }),
    // No per-request child logger (a child per delivery is not free under a webhook
    // storm); routes log the job id themselves.
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
    ...timeoutOptions(HTTP_TIMEOUTS),
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
