import type { REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { BotContext } from './commands/types.js';
import type { SyncResult } from './services/discord/registration/command-sync.js';
import type { EditQueue } from './services/discord/edits/edit-queue.js';
import { createJobRenderer, renderThreadLine } from './services/discord/render/job-render.js';
import type { JobLifecycle } from './services/jobs/lifecycle.js';
import type { JobWatch } from './services/jobs/job-watch.js';
import type { CheckScheduler } from './services/jobs/ports.js';
import { recoverOpenJobs } from './services/jobs/recovery.js';
import { renderOperations } from './services/operations/index.js';
import type { AtomicKeyValueStore, JobStore } from './services/store/types.js';
import { createTrainingServices } from './services/training/index.js';
import { compileAllowList } from './services/net/address-policy.js';
import { createSafeDownloader } from './services/net/safe-download.js';
import { createSafePhotoDownloader } from './services/training/download.js';
import { RetentionSweeper } from './services/privacy/retention.js';
import { openMetricsWarning, type HttpServer } from './webhooks/server.js';
import { inPhase } from './start-errors.js';
import type { AuthFailureLimit } from './webhooks/auth-failures.js';
import { JobKeys } from './webhooks/job-keys.js';
import type { GatewayLease } from './services/cluster/gateway-lease.js';
import { createCluster } from './runtime/cluster.js';
import { createCommunity } from './runtime/community.js';
import { buildContext } from './runtime/context.js';
import { createDiscordRest } from './runtime/discord-rest.js';
import { buildHttp, buildMetricsHttp } from './runtime/http.js';
import { Disposers } from './runtime/disposers.js';
import { createInteractions } from './runtime/interactions.js';
import { openQueues, type EditDelivery } from './runtime/job-engine.js';
import { createJobs } from './runtime/jobs.js';
import { createMediaSide } from './runtime/media.js';
import { openStore } from './runtime/store.js';

export type { EditDelivery } from './runtime/job-engine.js';

export interface AppOptions {
  logger: Logger;
  now?: () => number;
  /** Per-source budget of failed webhook authentications (default DEFAULT_AUTH_FAILURE_LIMIT). */
  webhookAuthFailures?: AuthFailureLimit;
  /** Key namespace in the store (tests isolate runs sharing one Redis). */
  storeNamespace?: string;
  /** A command not answering by then is acknowledged on its behalf (default 1500 gateway, 2500 http; 0: at once). */
  interactionAckDeadlineMs?: number;
  /** Between two readings of the service account's balance (default ACCOUNT_READ_EVERY_MS). */
  accountReadEveryMs?: number;
}

export interface App {
  /** Embedded (SQLite, one process) or redis (BullMQ, any number of instances). */
  readonly mode: 'embedded' | 'redis';
  /** Redis gateway mode: the lease deciding which instance holds the gateway. */
  gatewayLease: GatewayLease | undefined;
  server: HttpServer;
  jobs: JobLifecycle;
  watch: JobWatch;
  /** Edits of job messages (in process or BullMQ) and of session messages (in process). */
  edits: EditDelivery & { sessions: EditQueue };
  checks: CheckScheduler;
  metrics: Metrics;
  context: BotContext;
  /** The job store itself (tests and benches inspect it; commands get a read-only view). */
  store: JobStore;
  /** The store's key/value space with its locks (fair use, settings, sessions); tests hold its locks. */
  kv: AtomicKeyValueStore;
  /** The bot-token REST (tests post messages with it). */
  rest: REST;
  /** Connected to Discord: the gateway is READY (or another instance holds it), or REST answered (http mode). */
  discordReady(): boolean;
  /** Listens, connects to Discord, syncs commands, resumes open jobs. */
  start(): Promise<{ url: string; commands: SyncResult[] | undefined }>;
  /** Stops taking webhooks and interactions, lets in-flight edits finish (bounded), closes everything. */
  stop(drainMs?: number): Promise<void>;
}

/**
 * Composition root: builds each part from typed config (src/runtime/*) and wires their ports.
 * Each part registers what it must close; `stop` closes in reverse order of registration, so
 * the order below is also the shutdown's, read bottom-up: Discord's intake first, the store last.
 */
export async function createApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const now = opts.now ?? Date.now;
  const metrics = createMetrics(config.instanceId);
  const namespace = opts.storeNamespace ?? 'mjb';
  const disposers = new Disposers();

  const stores = await openStore({ config, namespace, logger, disposers });
  // Every outbound download (photos, result files) goes through one SSRF-safe downloader.
  const allow = compileAllowList(config.outbound.allow);
  const downloader = createSafeDownloader();
  disposers.add({ name: 'downloader', close: () => downloader.close() });

  const mediaSide = createMediaSide({
    config,
    metrics,
    logger,
    accountReadEveryMs: opts.accountReadEveryMs,
    disposers,
  });
  // How a job's messages look; what each operation shows is the registry's, passed in.
  const render = createJobRenderer(renderOperations);
  const rest = createDiscordRest(config, logger, metrics);
  // Several instances (Redis): BullMQ for durable work, shared budgets, the gateway lease.
  const queues = await openQueues({
    redisUrl: config.store.redisUrl,
    namespace,
    logger,
    lockMs: config.jobs.queueLockMs,
  });
  disposers.add({ name: 'queues', close: () => queues?.bull.close() });
  const { channelBudget, editBudget, gatewayLease } = createCluster({
    config,
    redis: stores.redis,
    namespace,
    logger,
  });

  const jobKeys = new JobKeys();
  const { settings, ledger, publicPosts, gallery, community } = createCommunity({
    config,
    stores,
    botRest: rest.botRest,
    render,
    downloader,
    allow,
    channelBudget,
    logger,
    metrics,
    now,
  });
  const training = createTrainingServices({
    config,
    kv: stores.kv,
    jobState: async (jobId) => (await stores.jobs.get(jobId))?.state,
    refreshUrls: async (urls) =>
      (await rest.botRest.post('/attachments/refresh-urls', { body: { attachment_urls: urls } })) as unknown,
    download: createSafePhotoDownloader({ downloader, allow, maxBytes: config.photos.maxBytes }),
    logger: logger.child({ component: 'training' }),
    now,
  });
  const jobs = createJobs({
    config,
    stores,
    queues,
    channelBudget,
    editBudget,
    rest,
    mediaSide,
    renderers: { render: render.renderJob, renderReply: renderThreadLine },
    training,
    community,
    publicPosts,
    jobKeys,
    disposers,
    logger,
    metrics,
    now,
  });
  const { lifecycle, watch, checks } = jobs;
  const context = buildContext({
    config,
    stores,
    lifecycle,
    media: mediaSide.media,
    render,
    urgentReader: mediaSide.urgentReader,
    account: mediaSide.account,
    training,
    sessionEdits: jobs.edits.sessions,
    community,
    settings,
    ledger,
    botRest: rest.botRest,
    interactionRest: rest.interactionRest,
    editBudget,
    gallery,
    publicPosts,
    autoMod: jobs.autoMod,
    logger,
    now,
  });
  const retentionSweeper = new RetentionSweeper({
    jobs: stores.jobs,
    retentionMs: config.privacy.retentionDays * 86_400_000,
    logger: logger.child({ component: 'retention' }),
    now,
  });
  disposers.add({ name: 'retention sweep', close: () => retentionSweeper.stop() });
  disposers.add({ name: 'training', close: () => training.stop(), inline: true });
  disposers.add({ name: 'lifecycle', close: () => lifecycle.stop(), inline: true });
  disposers.add({ name: 'account', close: () => mediaSide.account.stop(), inline: true });

  const metricsServer = await buildMetricsHttp(config, logger, metrics);
  disposers.add({ name: 'metrics', close: () => metricsServer?.close() });
  const interactions = createInteractions({
    config,
    context,
    rest,
    kv: stores.kv,
    gatewayLease,
    ackDeadlineMs: opts.interactionAckDeadlineMs,
    logger,
    metrics,
    now,
  });
  const { endpoint, gateway, discordReady } = interactions;
  disposers.add({ name: 'interactions endpoint', close: () => endpoint?.close() });
  const server = await buildHttp({
    config,
    stores,
    lifecycle,
    jobKeys,
    interactions,
    gatewayLease,
    training,
    webhookAuthFailures: opts.webhookAuthFailures,
    logger,
    metrics,
  });
  disposers.add({ name: 'http', close: () => server.close() });
  // New commands stop first (the next holder resumes this session: a graceful stop hands the
  // gateway over), then webhooks and HTTP interactions.
  disposers.add({ name: 'gateway lease', close: () => gatewayLease?.stop() });
  disposers.add({ name: 'gateway', close: () => gateway?.disconnect({ keepSession: true }) });

  let stopping: Promise<void> | undefined;
  return {
    mode: queues ? 'redis' : 'embedded',
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
    discordReady,
    async start() {
      await inPhase('store', () => training.start());
      retentionSweeper.start();
      const url = await inPhase('http', () =>
        server.listen({ host: config.http.host, port: config.http.port }),
      );
      logger.info(
        { url, store: stores.backend, mode: config.publicUrl ? 'webhooks' : 'polling' },
        'HTTP server listening',
      );
      const openMetrics = openMetricsWarning(config);
      if (openMetrics) logger.warn({ host: config.http.host }, openMetrics);
      // The balance is known (metric, low-credit warning, /settings show) from the start, not after a 402.
      mediaSide.account.start();
      if (metricsServer && config.metrics.port !== undefined) {
        const metricsPort = config.metrics.port;
        const metricsUrl = await inPhase('metrics-http', () =>
          metricsServer.listen({ host: config.http.host, port: metricsPort }),
        );
        logger.info({ url: `${metricsUrl}/metrics` }, 'metrics listening');
      }
      await interactions.connect(url);
      const sync = await interactions.syncCommands();
      await recoverOpenJobs({
        store: stores.jobs,
        checks,
        jobKeys,
        logger: logger.child({ component: 'jobs' }),
      });
      return { url, commands: sync };
    },
    stop(drainMs = 10_000) {
      stopping ??= (async () => {
        logger.info('shutting down');
        await disposers.closeAll(logger, { drainMs });
        logger.info('stopped');
      })();
      return stopping;
    },
  };
}
