import { Client, Events, GatewayIntentBits, REST, Routes, type Interaction } from 'discord.js';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterQueue } from 'rate-limiter-flexible';
import type { Config } from './config.js';
import { createMetrics, type Metrics } from './metrics.js';
import { commandData, commands, components } from './commands/index.js';
import { createInteractionRouter } from './commands/router.js';
import type { BotContext } from './commands/types.js';
import { syncCommands, type SyncResult } from './services/discord/command-sync.js';
import { createInteractionRest, createRestTransport } from './services/discord/discord-transport.js';
import { DEFAULT_EDIT_QUEUE_OPTIONS, EditQueue } from './services/discord/edit-queue.js';
import { renderJob, renderThreadLine } from './services/discord/render.js';
import { JobService } from './services/jobs/job-service.js';
import { MediaClient } from './services/media/client.js';
import { createStores } from './services/store/index.js';
import type { JobStore, LockingKeyValueStore } from './services/store/types.js';
import { createTrainingServices } from './services/training/index.js';
import { buildMetricsServer, buildServer, type HttpServer } from './webhooks/server.js';
import { inPhase } from './start-errors.js';
import { CommunityService } from './services/community/community.js';
import { FairUseLedger } from './services/community/fair-use.js';
import { GuildSettingsStore } from './services/community/settings.js';
import { createThreadApi } from './services/community/threads.js';
import { GalleryPoster } from './services/community/gallery.js';
import { resultFiles } from './services/operations/index.js';
import type { AuthFailureLimit } from './webhooks/auth-failures.js';
import { JobKeys } from './webhooks/job-keys.js';
import { GatewayLease } from './services/cluster/gateway-lease.js';
import { JobOwnership } from './services/cluster/job-ownership.js';
import { RedisChannelBudget } from './services/cluster/redis-channel-budget.js';
import { HttpInteractions } from './services/discord/http-interactions.js';
import { createHeapTrim, exposedGc, type HeapTrim } from './services/runtime/heap-trim.js';

/** How long an interaction id stays claimed: far past its token's 15 min life, so a late redelivery still counts. */
const INTERACTION_CLAIM_TTL_MS = 60 * 60_000;

/** Message reads per second per instance when taking over finals (three instances: 24/s of Discord's 50). */
const TAKEOVER_READS_PER_SECOND = 8;

export interface AppOptions {
  logger: Logger;
  now?: () => number;
  /** Per-source budget of failed webhook authentications (default DEFAULT_AUTH_FAILURE_LIMIT). */
  webhookAuthFailures?: AuthFailureLimit;
  /** Key namespace in the store (tests isolate runs sharing one Redis). */
  storeNamespace?: string;
  /** http mode: a command not answering by then is acknowledged in the HTTP response (default 2500 ms). */
  interactionAckDeadlineMs?: number;
  /** Returns pooled heap pages after a peak (default: on when the process runs with `--expose-gc`). */
  heapTrim?: HeapTrim;
}

export interface App {
  /** The Discord client (the one holding the gateway, when this instance does). */
  readonly client: Client;
  /** Redis: the gateway lease (gateway held by one instance at a time). */
  gatewayLease: GatewayLease | undefined;
  /** Redis: which instance works on which job. */
  ownership: JobOwnership | undefined;
  server: HttpServer;
  jobs: JobService;
  edits: EditQueue;
  metrics: Metrics;
  context: BotContext;
  /** The job store itself (tests and benches inspect it; commands get a read-only view). */
  store: JobStore;
  /** The store's key/value space with its locks (fair use, settings, sessions); tests hold its locks. */
  kv: LockingKeyValueStore;
  /** Listens, logs in, syncs commands, resumes unfinished jobs. */
  start(): Promise<{ url: string; commands: SyncResult | undefined }>;
  /** Stops taking webhooks, lets in-flight edits finish (bounded), closes everything. */
  stop(drainMs?: number): Promise<void>;
}

/** Composition root: builds every service from typed config and wires them together. */
export async function createApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const now = opts.now ?? Date.now;
  const metrics = createMetrics(config.instanceId);
  const heapTrim =
    opts.heapTrim ?? createHeapTrim({ logger: logger.child({ component: 'memory' }), gc: exposedGc() });

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

  // Several instances on one Redis (an instance cannot know whether it is alone, so on
  // Redis this is always on): leases decide who holds the gateway and who works on a job.
  const clusterPrefix = `${opts.storeNamespace ?? 'mjb'}::cluster:`;
  const clusterLog = logger.child({ component: 'cluster' });
  const gatewayLease =
    stores.redis && config.discord.interactions.mode === 'gateway'
      ? new GatewayLease({
          redis: stores.redis,
          prefix: clusterPrefix,
          instanceId: config.instanceId,
          logger: clusterLog,
        })
      : undefined;
  const ownership = stores.redis
    ? new JobOwnership({
        redis: stores.redis,
        prefix: clusterPrefix,
        instanceId: config.instanceId,
        logger: clusterLog,
      })
    : undefined;

  if (ownership) metrics.countOwnedJobs(() => ownership.size());

  const makeClient = (): Client => {
    const c = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: config.discord.apiUrl } });
    c.rest.on('response', (req, res) => {
      metrics.discordRequests.inc({ route: req.route, status: String(res.status) });
    });
    c.rest.on('rateLimited', (info) => {
      logger.warn(
        { route: info.route, retryAfter: info.retryAfter, global: info.global, scope: info.scope },
        'Discord rate limit',
      );
    });
    return c;
  };
  /** Bot-token REST for every service (and the first gateway tenure's client). */
  const client = makeClient();
  // Standby instances and http mode never log in, yet post gallery messages and threads: the token goes on now.
  client.rest.setToken(config.discord.token);
  let gateway = client;
  const interactionRest: REST = createInteractionRest({ api: config.discord.apiUrl });
  const { interactions: interactionMode } = config.discord;

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
  // Every instance edits in the same channels: one budget per channel for all of them.
  const channelBudget = stores.redis
    ? new RedisChannelBudget({
        redis: stores.redis,
        prefix: clusterPrefix,
        logger: clusterLog,
        limit: DEFAULT_EDIT_QUEUE_OPTIONS.channelLimit,
        windowMs: DEFAULT_EDIT_QUEUE_OPTIONS.channelWindowMs,
        finalReserve: DEFAULT_EDIT_QUEUE_OPTIONS.finalReserve,
      })
    : undefined;
  const edits = new EditQueue({
    transport: createRestTransport({ botRest: editRest, interactionRest }),
    logger: logger.child({ component: 'edits' }),
    now,
    ...(channelBudget ? { channelBudget } : {}),
    onMessageGone: (jobId, reason) => {
      logger.info({ jobId, reason }, 'job message is gone; edits stopped');
      jobs.messageGone(jobId);
    },
    onDelivered: (jobId, d) => {
      metrics.webhookToEdit.observe((now() - d.pushedAt) / 1000);
      jobs.delivered(jobId, d.final);
    },
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
    gallery: new GalleryPoster({
      rest: client.rest,
      settings: guildSettings,
      kv: stores.kv,
      logger: logger.child({ component: 'gallery' }),
      now,
      ...(channelBudget ? { budget: channelBudget } : {}),
    }),
  });

  // Taking over a dead instance's finals reads each message once. Paced so that the survivors
  // together stay far under Discord's global 50 requests/s per bot token, which discord.js's
  // own limiter guards only per process (regression: a takeover of ~60 jobs drew a global 429).
  const takeoverReads = new RateLimiterQueue(
    new RateLimiterMemory({ points: TAKEOVER_READS_PER_SECOND, duration: 1 }),
    { maxQueueSize: 100_000 },
  );
  const trainingServices = createTrainingServices({
    config,
    kv: stores.kv,
    jobState: async (jobId) => (await stores.jobs.get(jobId))?.state,
    refreshUrls: async (urls) =>
      (await client.rest.post('/attachments/refresh-urls', { body: { attachment_urls: urls } })) as unknown,
    logger: logger.child({ component: 'training' }),
    now,
  });
  const training = trainingServices.sessions;
  const jobs = new JobService({
    store: stores.jobs,
    // An instance died after Discord took a final edit but before recording it: look first.
    finalShown: async (job) => {
      const marker = job.state === 'finished' ? resultFiles(job.result)[0] : job.error?.message;
      if (!marker || !job.message.messageId) return false;
      await takeoverReads.removeTokens(1);
      const msg = await client.rest.get(Routes.channelMessage(job.message.channelId, job.message.messageId));
      return JSON.stringify(msg).includes(JSON.stringify(marker).slice(1, -1));
    },
    ...(ownership ? { ownership } : {}),
    onFinal: async (job) => {
      // A training upload's session closes (finished) or is opened again for Retry (failed).
      await Promise.all([community.jobEnded(job), trainingServices.jobEnded(job)]);
    },
    jobKeys,
    media,
    edits,
    render: renderJob,
    renderReply: renderThreadLine,
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

  const context: BotContext = {
    logger: logger.child({ component: 'commands' }),
    jobs,
    records: stores.jobs,
    media,
    training,
    photoUpload: trainingServices.uploader,
    consent: trainingServices.consent,
    edits,
    community,
    settings: guildSettings,
    ledger,
    costs: config.community.costs,
    threads: createThreadApi(client.rest),
    limits: { maxImageBytes: config.photos.maxBytes },
    now,
  };
  const route = createInteractionRouter(commands, components, context);
  const onInteraction = (i: Interaction): void => {
    void (async () => {
      // Fencing: an instance that lost the gateway lease (paused past it) never acts on what
      // its dying connection still delivers; the lease's token must still be ours in Redis.
      if (gatewayLease && !(await gatewayLease.verify())) {
        logger.warn(
          { interactionId: i.id },
          'interaction ignored: this instance no longer holds the gateway',
        );
        return;
      }
      await route(i);
    })().catch((err: unknown) => logger.error({ err }, 'interaction router failed'));
  };
  const listen = (c: Client): void => {
    c.on(Events.InteractionCreate, onInteraction);
    c.on(Events.Error, (err) => logger.error({ err }, 'discord client error'));
    c.on(Events.ShardDisconnect, (_e, shard) =>
      logger.warn({ shard }, 'gateway disconnected; discord.js reconnects'),
    );
    c.on(Events.ShardResume, (shard) => logger.info({ shard }, 'gateway resumed'));
  };
  listen(client);

  /** Logs in the gateway client and waits for READY. */
  const connectGateway = async (): Promise<void> => {
    const c = gateway;
    const ready = new Promise<void>((resolve) => c.once(Events.ClientReady, () => resolve()));
    await c.login(config.discord.token);
    await ready;
    logger.info({ user: c.user?.tag, fencingToken: gatewayLease?.fencingToken }, 'connected to Discord');
  };
  /** Lease lost: drop the connection now; a later tenure gets a fresh client (a destroyed one cannot log in again). */
  const dropGateway = async (): Promise<void> => {
    const c = gateway;
    metrics.gatewayLeader.set(0);
    await c.destroy();
    // destroy() clears the REST token; the bot-token REST serves every service, standby or not.
    client.rest.setToken(config.discord.token);
    gateway = makeClient();
    listen(gateway);
  };
  const http =
    interactionMode.mode === 'http'
      ? new HttpInteractions({
          client,
          logger: logger.child({ component: 'interactions' }),
          ...(opts.interactionAckDeadlineMs !== undefined
            ? { ackDeadlineMs: opts.interactionAckDeadlineMs }
            : {}),
          // Set-if-absent in the store every instance shares: one run per interaction id.
          claim: (id) =>
            stores.kv.withLock(`interaction:${id}`, async () => {
              if ((await stores.kv.get(`interaction-seen:${id}`)) !== undefined) return false;
              await stores.kv.set(`interaction-seen:${id}`, { at: now() }, INTERACTION_CLAIM_TTL_MS);
              return true;
            }),
        })
      : undefined;
  if (http) {
    http.install(client.rest);
    http.install(interactionRest);
  }
  // http mode: Discord is "ready" once the token has been checked over REST at start.
  let restReady = false;

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
      // http mode: REST checked at start. Gateway mode on Redis: standby instances (another
      // holds the gateway) are ready, they serve webhooks and jobs.
      discordReady: () =>
        http ? restReady : gatewayLease && !gatewayLease.holds() ? true : gateway.isReady(),
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
    ...(config.media.photoFormat === 'url' ? { photos: { spool: trainingServices.spool } } : {}),
    ...(http && interactionMode.mode === 'http'
      ? {
          interactions: {
            publicKey: interactionMode.publicKey,
            handle: (raw) => http.handle(raw),
            metrics,
          },
        }
      : {}),
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
    get client() {
      return gateway;
    },
    gatewayLease,
    ownership,
    server,
    jobs,
    edits,
    metrics,
    context,
    store: stores.jobs,
    kv: stores.kv,
    async start() {
      await inPhase('store', () => trainingServices.start());
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
      if (ownership) {
        await inPhase('store', () =>
          ownership.start({
            adopt: (jobId) => jobs.adopt(jobId),
            changed: (jobId, source) => jobs.changed(jobId, source),
          }),
        );
      }
      if (http) {
        // No gateway connection: check the token once over REST (a bad one stops the start).
        const me = await inPhase('discord', () => client.rest.get(Routes.user('@me')));
        restReady = true;
        logger.info(
          { user: (me as { username?: string }).username, interactions: `${url}/interactions` },
          'Discord REST ready; interactions arrive over HTTP (no gateway)',
        );
      } else if (gatewayLease) {
        let first: Promise<void> | undefined;
        await inPhase('store', () =>
          gatewayLease.start({
            acquired: () => {
              metrics.gatewayLeader.set(1);
              // The gateway client is fresh here: never logged in, or made anew when the last tenure ended.
              const connecting = connectGateway();
              first ??= connecting;
              return connecting;
            },
            lost: () => dropGateway(),
          }),
        );
        // The first holder connects as a lone bot does, and a failure stops the start the same way.
        if (first) await inPhase('discord', () => first as Promise<void>);
        else logger.info('another instance holds the gateway; this one serves webhooks and jobs (standby)');
      } else {
        await inPhase('discord', connectGateway);
      }
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
      // Start-up and recovery are the bot's usual memory peak: what they left pooled goes back now,
      // and pages pooled by a later peak once they lie unused.
      heapTrim.trim('start-up and recovery done');
      heapTrim.start();
      return { url, commands: sync };
    },
    stop(drainMs = 10_000) {
      stopping ??= (async () => {
        logger.info('shutting down');
        heapTrim.stop();
        await server.close().catch((err: unknown) => logger.warn({ err }, 'HTTP close failed'));
        http?.close();
        await metricsServer?.close().catch((err: unknown) => logger.warn({ err }, 'metrics close failed'));
        jobs.stop();
        trainingServices.stop();
        await gatewayLease
          ?.stop()
          .catch((err: unknown) => logger.warn({ err }, 'gateway lease release failed'));
        const drained = await edits.drain(drainMs);
        if (!drained)
          logger.warn({ pending: edits.depth() }, 'some message edits were not delivered before shutdown');
        edits.close();
        // Jobs still owned go back to the pool: another instance resumes them at its next sweep.
        await ownership?.stop().catch((err: unknown) => logger.warn({ err }, 'job lease release failed'));
        await gateway.destroy();
        if (gateway !== client) await client.destroy();
        await media.close().catch(() => undefined);
        await stores.close().catch((err: unknown) => logger.warn({ err }, 'store close failed'));
        logger.info('stopped');
      })();
      return stopping;
    },
  };
}
