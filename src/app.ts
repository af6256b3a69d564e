import type { Config } from './config.js';
import { createMetrics } from './metrics.js';
import { createJobRenderer, renderThreadLine } from './services/discord/render/job-render.js';
import { renderOperations } from './services/operations/index.js';
import { JobKeys } from './webhooks/job-keys.js';
import type { App, AppOptions } from './runtime/app-types.js';
import { createCommunity } from './runtime/community.js';
import { buildContext } from './runtime/context.js';
import { createDiscordRest } from './runtime/discord-rest.js';
import { Disposers } from './runtime/disposers.js';
import { openEmbedded } from './runtime/embedded.js';
import { buildHttp, buildMetricsHttp } from './runtime/http.js';
import { createInteractions } from './runtime/interactions.js';
import { createJobs } from './runtime/jobs.js';
import { createMediaSide } from './runtime/media.js';
import { createOutbound } from './runtime/outbound.js';
import { createPeriodicWork } from './runtime/periodic.js';
import { openRedis } from './runtime/redis.js';
import { startApp, stopOnce } from './runtime/start.js';
import { createTraining } from './runtime/training.js';

export type { App, AppOptions } from './runtime/app-types.js';
export type { EditDelivery } from './runtime/job-engine.js';

/**
 * Composition root: builds each part from typed config (src/runtime/*) and wires their ports.
 * Each part registers what it must close; `stop` closes in reverse order of registration, so
 * the order below is also the shutdown's, read bottom-up: Discord's intake first, the store last.
 */
export async function createApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const now = opts.now ?? Date.now;
  const metrics = createMetrics(config.instanceId);
  const disposers = new Disposers();
  const core = { config, logger, metrics, now, disposers };

  // Embedded (SQLite, one process) or Redis (BullMQ, shared budgets, the gateway lease; any number of instances).
  const { redisUrl } = config.store;
  const platform = await (redisUrl
    ? openRedis({ ...core, namespace: opts.storeNamespace ?? 'mjb', redisUrl })
    : openEmbedded({ ...core, namespace: opts.storeNamespace ?? 'mjb' }));
  const { stores, channelBudget, gatewayLease } = platform;
  const outbound = createOutbound(config, disposers);
  const mediaSide = createMediaSide({ ...core, kv: stores.kv });
  // How a job's messages look; what each operation shows is the registry's, passed in.
  const render = createJobRenderer(renderOperations);
  const rest = createDiscordRest(config, logger, metrics);
  const jobKeys = new JobKeys();
  // Guild settings, fair use and credits, the gallery, where jobs were posted in public.
  const communitySide = createCommunity({
    ...core,
    ...outbound,
    stores,
    botRest: rest.botRest,
    render,
    channelBudget,
  });
  const training = createTraining({ ...core, stores, rest, outbound });
  const renderers = {
    render: render.renderJob,
    renderReply: renderThreadLine,
    withoutFreeText: render.withoutFreeText,
  };
  const jobs = createJobs({
    ...core,
    ...platform,
    ...communitySide,
    rest,
    mediaSide,
    renderers,
    training,
    jobKeys,
  });
  const { lifecycle, watch, checks } = jobs;
  disposers.add({ name: 'lifecycle', close: () => lifecycle.stop(), inline: true });
  // What every command and component handler is given.
  const context = buildContext({
    ...core,
    ...mediaSide,
    ...communitySide,
    ...rest,
    stores,
    lifecycle,
    render,
    training,
    sessionEdits: jobs.edits.sessions,
    editBudget: platform.editBudget,
    autoMod: jobs.autoMod,
  });
  const periodic = createPeriodicWork({
    ...core,
    schedule: platform.schedule,
    stores,
    account: mediaSide.account,
    accountReadEveryMs: opts.accountReadEveryMs,
  });

  const metricsServer = await buildMetricsHttp(config, logger, metrics);
  disposers.add({ name: 'metrics', close: () => metricsServer?.close() });
  const interactions = createInteractions({
    ...core,
    context,
    rest,
    kv: stores.kv,
    gatewayLease,
    ackDeadlineMs: opts.interactionAckDeadlineMs,
  });
  const { endpoint, gateway } = interactions;
  disposers.add({ name: 'interactions endpoint', close: () => endpoint?.close() });
  const server = await buildHttp({
    ...core,
    stores,
    lifecycle,
    jobKeys,
    interactions,
    gatewayLease,
    training,
    webhookAuthFailures: opts.webhookAuthFailures,
  });
  disposers.add({ name: 'http', close: () => server.close() });
  // New commands stop first (the next holder resumes this session: a graceful stop hands the
  // gateway over), then webhooks and HTTP interactions.
  disposers.add({ name: 'gateway lease', close: () => gatewayLease?.stop() });
  disposers.add({ name: 'gateway', close: () => gateway?.disconnect({ keepSession: true }) });

  return {
    mode: platform.mode,
    gatewayLease,
    server,
    jobs: lifecycle,
    watch,
    edits: jobs.edits,
    checks,
    metrics,
    context,
    store: stores.jobs,
    kv: stores.kv,
    rest: rest.botRest,
    discordReady: interactions.discordReady,
    start: () =>
      startApp({ ...core, stores, training, periodic, server, metricsServer, interactions, checks, jobKeys }),
    stop: stopOnce(disposers, logger),
  };
}
