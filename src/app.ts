import { Client, Events, GatewayIntentBits, REST, type Interaction } from 'discord.js';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createMetrics, type Metrics } from './metrics.js';
import { commandData, commands, components } from './commands/index.js';
import { createInteractionRouter } from './commands/router.js';
import type { BotContext } from './commands/types.js';
import { syncCommands, type SyncResult } from './services/discord/command-sync.js';
import { createInteractionRest, createRestTransport } from './services/discord/discord-transport.js';
import { EditQueue } from './services/discord/edit-queue.js';
import { renderJob } from './services/discord/render.js';
import { JobService } from './services/jobs/job-service.js';
import { MediaClient } from './services/media/client.js';
import { createStores } from './services/store/index.js';
import { TrainingSessions } from './services/training/sessions.js';
import { buildMetricsServer, buildServer, type HttpServer } from './webhooks/server.js';
import { inPhase } from './start-errors.js';
import { CommunityService } from './services/community/community.js';
import { FairUseLedger } from './services/community/fair-use.js';
import { GuildSettingsStore } from './services/community/settings.js';
import type { AuthFailureLimit } from './webhooks/auth-failures.js';
import { JobKeys } from './webhooks/job-keys.js';

export interface AppOptions {
  logger: Logger;
  now?: () => number;
  /** Per-source budget of failed webhook authentications (default DEFAULT_AUTH_FAILURE_LIMIT). */
  webhookAuthFailures?: AuthFailureLimit;
  /** Key namespace in the store (tests isolate runs sharing one Redis). */
  storeNamespace?: string;
}

export interface App {
  client: Client;
  server: HttpServer;
  jobs: JobService;
  edits: EditQueue;
  metrics: Metrics;
  context: BotContext;
  /** Listens, logs in, syncs commands, resumes unfinished jobs. */
  start(): Promise<{ url: string; commands: SyncResult | undefined }>;
  /** Stops taking webhooks, lets in-flight edits finish (bounded), closes everything. */
  stop(drainMs?: number): Promise<void>;
}

/** Composition root: builds every service from typed config and wires them together. */
export async function createApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const now = opts.now ?? Date.now;
  const metrics = createMetrics();

  const stores = await createStores({
    ...(config.store.redisUrl ? { redisUrl: config.store.redisUrl } : {}),
    dataDir: config.store.dataDir,
    jobTtlMs: config.store.jobTtlMs,
    logger: logger.child({ component: 'store' }),
    ...(opts.storeNamespace ? { namespace: opts.storeNamespace } : {}),
  });

  const media = new MediaClient({
    baseUrl: config.media.baseUrl,
    apiKey: config.media.apiKey,
    paths: config.media.paths,
    photoFormat: config.media.photoFormat,
    timeoutMs: config.media.timeoutMs,
    upscaleTimeoutMs: config.media.upscaleTimeoutMs,
    logger: logger.child({ component: 'media' }),
  });

  const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: config.discord.apiUrl } });
  client.rest.on('response', (req, res) => {
    metrics.discordRequests.inc({ route: req.route, status: String(res.status) });
  });
  client.rest.on('rateLimited', (info) => {
    logger.warn(
      { route: info.route, retryAfter: info.retryAfter, global: info.global, scope: info.scope },
      'Discord rate limit',
    );
  });
  const interactionRest: REST = createInteractionRest({ api: config.discord.apiUrl });

  // Channel edits get their own bot-token REST that rejects on 429 instead of sleeping inside it:
  // the edit queue then waits itself and sends the *latest* state, not a stale one.
  // offset 0: its bucket resets when Discord says, as the queue's own budget assumes.
  const editRest = new REST({
    api: config.discord.apiUrl,
    rejectOnRateLimit: () => true,
    offset: 0,
  }).setToken(config.discord.token);
  for (const rest of [interactionRest, editRest]) {
    rest.on('response', (req, res) =>
      metrics.discordRequests.inc({ route: req.route, status: String(res.status) }),
    );
  }
  const edits = new EditQueue({
    transport: createRestTransport({ botRest: editRest, interactionRest }),
    logger: logger.child({ component: 'edits' }),
    now,
    onMessageGone: (jobId, reason) => logger.info({ jobId, reason }, 'job message is gone; edits stopped'),
    onDelivered: (_jobId, d) => metrics.webhookToEdit.observe((now() - d.pushedAt) / 1000),
    metrics: {
      editsSent: (route, outcome) => metrics.editsSent.inc({ route, outcome }),
      queueDepth: (n) => metrics.editQueueDepth.set(n),
    },
  });

  // Job secrets this process knows, so webhooks for them authenticate without a store read.
  const jobKeys = new JobKeys();
  const guildSettings = new GuildSettingsStore({ kv: stores.kv, defaults: config.community.defaults });
  // A slot is held at most as long as a job can run (then it times out and frees it anyway).
  const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: config.jobs.maxDurationMs + 3_600_000, now });
  const community = new CommunityService({
    settings: guildSettings,
    ledger,
    costs: config.community.costs,
    logger: logger.child({ component: 'community' }),
  });

  const jobs = new JobService({
    store: stores.jobs,
    onFinal: (job) => community.jobEnded(job),
    jobKeys,
    media,
    edits,
    render: renderJob,
    logger: logger.child({ component: 'jobs' }),
    metrics,
    now,
    options: {
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
      maxDurationMs: config.jobs.maxDurationMs,
      pollInitialMs: config.jobs.pollInitialMs,
      pollMaxMs: config.jobs.pollMaxMs,
      webhookSilenceMs: config.jobs.webhookSilenceMs,
    },
  });

  const training = new TrainingSessions({
    kv: stores.kv,
    logger: logger.child({ component: 'training' }),
    maxBytes: config.photos.maxBytes,
    ttlMs: config.photos.sessionTtlMs,
    refreshUrls: async (urls) =>
      (await client.rest.post('/attachments/refresh-urls', { body: { attachment_urls: urls } })) as unknown,
    now,
  });

  const context: BotContext = {
    config,
    logger: logger.child({ component: 'commands' }),
    jobs,
    media,
    store: stores.jobs,
    kv: stores.kv,
    training,
    edits,
    community,
    settings: guildSettings,
    ledger,
    now,
  };
  const route = createInteractionRouter(commands, components, context);
  client.on(Events.InteractionCreate, (i: Interaction) => {
    void route(i).catch((err: unknown) => logger.error({ err }, 'interaction router failed'));
  });
  client.on(Events.Error, (err) => logger.error({ err }, 'discord client error'));
  client.on(Events.ShardDisconnect, (_e, shard) =>
    logger.warn({ shard }, 'gateway disconnected; discord.js reconnects'),
  );
  client.on(Events.ShardResume, (shard) => logger.info({ shard }, 'gateway resumed'));

  const server = await buildServer({
    logger,
    trustProxy: config.http.trustProxy,
    webhook: {
      store: stores.jobs,
      applyResult: (jobId, result) => jobs.applyResult(jobId, result, 'webhook'),
      metrics,
      keys: jobKeys,
      ...(opts.webhookAuthFailures ? { authFailures: opts.webhookAuthFailures } : {}),
    },
    health: {
      discordReady: () => client.isReady(),
      pingStore: () => stores.jobs.ping(),
      registry: metrics.registry,
    },
    metrics:
      config.metrics.port !== undefined
        ? false
        : { ...(config.metrics.token !== undefined ? { token: config.metrics.token } : {}) },
  });
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : await buildMetricsServer({
          logger,
          registry: metrics.registry,
          ...(config.metrics.token !== undefined ? { token: config.metrics.token } : {}),
        });

  let stopping: Promise<void> | undefined;

  return {
    client,
    server,
    jobs,
    edits,
    metrics,
    context,
    async start() {
      const url = await inPhase('http', () =>
        server.listen({ host: config.http.host, port: config.http.port }),
      );
      logger.info(
        { url, store: stores.backend, mode: config.publicUrl ? 'webhooks' : 'polling' },
        'HTTP server listening',
      );
      if (metricsServer && config.metrics.port !== undefined) {
        const metricsPort = config.metrics.port;
        const metricsUrl = await inPhase('metrics-http', () =>
          metricsServer.listen({ host: config.http.host, port: metricsPort }),
        );
        logger.info({ url: `${metricsUrl}/metrics` }, 'metrics listening');
      }
      await inPhase('discord', async () => {
        const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
        await client.login(config.discord.token);
        await ready;
      });
      logger.info({ user: client.user?.tag }, 'connected to Discord');
      let sync: SyncResult | undefined;
      try {
        sync = await syncCommands({
          rest: client.rest,
          applicationId: config.discord.applicationId,
          guildId: config.discord.guildId,
          commands: commandData(),
          logger,
        });
      } catch (err) {
        // The bot still serves already-registered commands; `npm run register` retries on demand.
        logger.error({ err }, 'could not register slash commands');
      }
      await jobs.recover();
      return { url, commands: sync };
    },
    stop(drainMs = 10_000) {
      stopping ??= (async () => {
        logger.info('shutting down');
        await server.close().catch((err: unknown) => logger.warn({ err }, 'HTTP close failed'));
        await metricsServer?.close().catch((err: unknown) => logger.warn({ err }, 'metrics close failed'));
        jobs.stop();
        const drained = await edits.drain(drainMs);
        if (!drained)
          logger.warn({ pending: edits.depth() }, 'some message edits were not delivered before shutdown');
        edits.close();
        await client.destroy();
        await media.close().catch(() => undefined);
        await stores.close().catch((err: unknown) => logger.warn({ err }, 'store close failed'));
        logger.info('stopped');
      })();
      return stopping;
    },
  };
}
