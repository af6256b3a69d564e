import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { GatewayLease } from '../services/cluster/gateway-lease.js';
import type { JobLifecycle } from '../services/jobs/lifecycle.js';
import { mediaOperations } from '../services/operations/index.js';
import type { Stores } from '../services/store/index.js';
import type { TrainingServices } from '../services/training/index.js';
import type { AuthFailureLimit } from '../webhooks/auth-failures.js';
import type { JobKeys } from '../webhooks/job-keys.js';
import { buildMetricsServer, buildServer, type HttpServer } from '../webhooks/server.js';
import type { Logger } from 'pino';
import type { Interactions } from './interactions.js';

/** The separate `/metrics` listener, when METRICS_PORT is set. */
export async function buildMetricsHttp(config: Config, logger: Logger, metrics: Metrics) {
  return config.metrics.port === undefined
    ? undefined
    : await buildMetricsServer({
        logger,
        registry: metrics.registry,
        ...(config.metrics.token !== undefined ? { token: config.metrics.token } : {}),
      });
}

/** The HTTP server: result webhooks, health, `/metrics` (without its own port), photos, interactions. */
export async function buildHttp(deps: {
  config: Config;
  stores: Stores;
  lifecycle: JobLifecycle;
  jobKeys: JobKeys;
  interactions: Interactions;
  gatewayLease: GatewayLease | undefined;
  training: TrainingServices;
  webhookAuthFailures: AuthFailureLimit | undefined;
  logger: Logger;
  metrics: Metrics;
}): Promise<HttpServer> {
  const { config, stores, lifecycle, gatewayLease, metrics } = deps;
  const { endpoint } = deps.interactions;
  const interactionMode = config.discord.interactions;
  return buildServer({
    logger: deps.logger,
    trustProxy: config.http.trustProxy,
    webhook: {
      store: stores.jobs,
      applyResult: (jobId, result) => lifecycle.applyResult(jobId, result, 'webhook'),
      operations: mediaOperations,
      metrics,
      keys: deps.jobKeys,
      ...(deps.webhookAuthFailures ? { authFailures: deps.webhookAuthFailures } : {}),
    },
    health: {
      // Gateway mode on Redis: standby instances (another holds the gateway) are ready, they serve webhooks and jobs.
      discordReady: deps.interactions.discordReady,
      ...(gatewayLease ? { gateway: () => (gatewayLease.holds() ? 'held' : 'standby') } : {}),
      instance: config.instanceId,
      pingStore: () => stores.jobs.ping(),
      registry: metrics.registry,
    },
    metrics:
      config.metrics.port !== undefined
        ? false
        : { ...(config.metrics.token !== undefined ? { token: config.metrics.token } : {}) },
    // Only the bot's cleaned copies are linked to the service (config requires PUBLIC_URL).
    ...(config.media.photoFormat === 'url' ? { photos: { spool: deps.training.spool } } : {}),
    ...(endpoint && interactionMode.mode === 'http'
      ? {
          interactions: {
            publicKey: interactionMode.publicKey,
            handle: (raw) => endpoint.handle(raw),
            metrics,
          },
        }
      : {}),
  });
}
