import { API } from '@discordjs/core/http-only';
import { REST } from '@discordjs/rest';
import { Routes, type APIInteraction, type APIUser } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createMetrics, type Metrics } from './metrics.js';
import { commands, components, registrationPlan } from './commands/index.js';
import { ImageTargets } from './services/jobs/image-targets.js';
import { createInteractionRouter } from './commands/router.js';
import type { BotContext } from './commands/types.js';
import { syncCommandScopes, type SyncResult } from './services/discord/registration/command-sync.js';
import { createInteractionRest, createRestTransport } from './services/discord/discord-transport.js';
import { DEFAULT_EDIT_QUEUE_OPTIONS, EditQueue } from './services/discord/edits/edit-queue.js';
import { QueuedJobMessages, replyKey, type JobRenderers } from './services/discord/edits/job-messages.js';
import { BotInteraction, type AckTransport } from './services/discord/interactions/interaction.js';
import { HttpInteractionEndpoint } from './services/discord/interactions/http-endpoint.js';
import { Gateway } from './services/discord/gateway/gateway.js';
import {
  createJobRenderer,
  renderRemoved,
  renderRemovedAtRequest,
  renderThreadLine,
} from './services/discord/render/job-render.js';
import { AfterFinalWork, InProcessAfterFinal } from './services/jobs/after-final.js';
import { JobLifecycle } from './services/jobs/lifecycle.js';
import { JobWatch, type TaskReading } from './services/jobs/job-watch.js';
import type { AfterFinalQueue, CheckScheduler, MessageUpdates } from './services/jobs/ports.js';
import { recoverOpenJobs } from './services/jobs/recovery.js';
import { RetryGuard } from './services/jobs/retry-guard.js';
import { TimerChecks } from './services/jobs/timer-checks.js';
import { AccountMonitor } from './services/media/account-monitor.js';
import { MediaClient } from './services/media/client.js';
import { SubmitLimit } from './services/media/submit-limit.js';
import { TaskReader } from './services/media/task-batcher.js';
import { TaskLookup } from './services/media/task-lookup.js';
import type { BullContext } from './services/queues/bull.js';
import type { BullJobEdits } from './services/queues/job-edits.js';
import { AutoModWithholding } from './services/moderation/automod.js';
import { ResultTakeDown } from './services/moderation/take-down.js';
import { mediaOperations, renderOperations } from './services/operations/index.js';
import { createStores } from './services/store/index.js';
import { lockDataDir } from './services/store/data-dir-lock.js';
import { createInteractionClaim } from './services/discord/interactions/interaction-claim.js';
import { gatewayIntake } from './services/discord/interactions/gateway-intake.js';
import { trackCallbackRetries } from './services/discord/interactions/callback-retries.js';
import type { AtomicKeyValueStore, JobStore, LockingKeyValueStore } from './services/store/types.js';
import { createTrainingServices } from './services/training/index.js';
import { MemberData } from './services/privacy/member-data.js';
import { PublicPosts } from './services/privacy/public-posts.js';
import { PublicCleanup } from './services/privacy/public-cleanup.js';
import { MemoryChannelBudget, type ChannelBudget } from './services/discord/edits/channel-budget.js';
import { compileAllowList } from './services/net/address-policy.js';
import { createSafeDownloader } from './services/net/safe-download.js';
import { createSafePhotoDownloader } from './services/training/download.js';
import { RetentionSweeper } from './services/privacy/retention.js';
import { buildMetricsServer, buildServer, openMetricsWarning, type HttpServer } from './webhooks/server.js';
import { inPhase } from './start-errors.js';
import { shutdownSteps } from './shutdown-steps.js';
import { CommunityService } from './services/community/community.js';
import { FairUseLedger } from './services/community/fair-use.js';
import { GuildSettingsStore } from './services/community/settings.js';
import { createThreadApi } from './services/community/threads.js';
import { GALLERY_MEMORY_BYTES, GalleryPoster } from './services/community/gallery.js';
import { ByteBudget } from './services/net/byte-budget.js';
import type { AuthFailureLimit } from './webhooks/auth-failures.js';
import { JobKeys } from './webhooks/job-keys.js';
import { GatewayLease } from './services/cluster/gateway-lease.js';
import { RedisChannelBudget } from './services/cluster/redis-channel-budget.js';

/** Gateway: a command not answering by then is acknowledged on its behalf (Discord allows 3 s in all). */
const GATEWAY_ACK_AFTER_MS = 1500;
/** How long a submission may wait out the service's 429s in all (MediaClient's bound). */
const SUBMIT_WAIT_BOUND_MS = 5 * 60_000;
/** HTTP: the acknowledgement travels in the HTTP response itself, so it can wait a little longer. */
const HTTP_ACK_AFTER_MS = 2500;
/**
 * The service account's balance is read at start and then this often, by every instance
 * (one GET each: each serves `/settings show` and its own `/metrics` from its reading).
 */
const ACCOUNT_READ_EVERY_MS = 5 * 60_000;

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

/** The Discord edits of job messages, whichever way they are delivered (tests, benches). */
export interface EditDelivery {
  /** Resolves true once no edit waits or runs, false after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean>;
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
  kv: LockingKeyValueStore & AtomicKeyValueStore;
  /** The bot-token REST (tests post messages with it). */
  rest: REST;
  /** Connected to Discord: the gateway is READY (or another instance holds it), or REST answered (http mode). */
  discordReady(): boolean;
  /** Listens, connects to Discord, syncs commands, resumes open jobs. */
  start(): Promise<{ url: string; commands: SyncResult[] | undefined }>;
  /** Stops taking webhooks and interactions, lets in-flight edits finish (bounded), closes everything. */
  stop(drainMs?: number): Promise<void>;
}

/** Composition root: builds every service from typed config and wires them together. */
export async function createApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const now = opts.now ?? Date.now;
  const metrics = createMetrics(config.instanceId);
  const namespace = opts.storeNamespace ?? 'mjb';

  // The embedded store serves one process: a second bot on this DATA_DIR stops here.
  const dataDirLock = config.store.redisUrl ? undefined : await lockDataDir(config.store.dataDir);
  const stores = await createStores({
    ...(config.store.redisUrl ? { redisUrl: config.store.redisUrl } : {}),
    dataDir: config.store.dataDir,
    jobTtlMs: config.store.jobTtlMs,
    eventWriteMs: Math.max(100, Math.round(config.jobs.webhookSilenceMs / 3)),
    logger: logger.child({ component: 'store' }),
    namespace,
  }).catch(async (err: unknown) => {
    await dataDirLock?.release();
    throw err;
  });

  const mediaLog = logger.child({ component: 'media' });
  const media = new MediaClient({
    baseUrl: config.media.baseUrl,
    apiKey: config.media.apiKey,
    paths: config.media.paths,
    photoFormat: config.media.photoFormat,
    timeoutMs: config.media.timeoutMs,
    upscaleTimeoutMs: config.media.upscaleTimeoutMs,
    logger: mediaLog,
    submitLimit: new SubmitLimit({
      initial: config.media.submitConcurrency,
      onChange: (n) => metrics.mediaSubmitConcurrency.set(n),
    }),
    busy: { maxTotalWaitMs: SUBMIT_WAIT_BOUND_MS },
    operations: mediaOperations,
  });
  // How a job's messages look; what each operation shows is the registry's, passed in.
  const jobRender = createJobRenderer(renderOperations);
  // Every read of a task (polls, recovery, Refresh, autocomplete) goes through one batched, paced reader.
  const taskReader = new TaskReader({
    media,
    requestsPerSecond: config.media.readsPerSecond,
    logger: mediaLog,
  });
  const reader: TaskReading = { read: (op, taskId) => taskReader.read(op, taskId) };
  const urgentReader: TaskReading = { read: (op, taskId) => taskReader.read(op, taskId, { urgent: true }) };
  const account = new AccountMonitor({
    media,
    metrics,
    logger: mediaLog,
    lowCredits: config.media.lowCredits,
    intervalMs: opts.accountReadEveryMs ?? ACCOUNT_READ_EVERY_MS,
  });

  // ---- Discord REST: the bot token's, the interaction webhooks' (no global limiter), the edits'.
  const countResponses = (rest: REST) =>
    rest.on('response', (req, res) =>
      metrics.discordRequests.inc({ route: req.route, status: String(res.status) }),
    );
  const botRest = new REST({ api: config.discord.apiUrl }).setToken(config.discord.token);
  botRest.on('rateLimited', (info) =>
    logger.warn(
      { route: info.route, retryAfter: info.retryAfter, global: info.global, scope: info.scope },
      'Discord rate limit',
    ),
  );
  const interactionRest = createInteractionRest({ api: config.discord.apiUrl });
  // Interaction callbacks keep REST's own retries (a lost answer is recognised as 40060 and taken).
  const callbackRest = new REST({
    api: config.discord.apiUrl,
    globalRequestsPerSecond: Number.POSITIVE_INFINITY,
  });
  // Channel edits reject on 429 instead of sleeping inside REST: the queue waits and sends the latest state.
  const editRest = new REST({
    api: config.discord.apiUrl,
    rejectOnRateLimit: () => true,
    offset: 0,
  }).setToken(config.discord.token);
  for (const rest of [botRest, interactionRest, callbackRest, editRest]) countResponses(rest);
  const api = new API(callbackRest);
  const transport = createRestTransport({ botRest: editRest, interactionRest });

  // ---- Several instances (Redis): BullMQ for durable work, shared budgets, the gateway lease.
  const redisUrl = config.store.redisUrl;
  // BullMQ is loaded only on Redis: the embedded store never needs it.
  const queues = redisUrl
    ? await Promise.all([
        import('./services/queues/bull.js'),
        import('./services/queues/job-edits.js'),
        import('./services/queues/job-queues.js'),
      ])
    : undefined;
  const bull: (BullContext & { close(): Promise<void> }) | undefined =
    redisUrl && queues
      ? await queues[0].openBull({
          url: redisUrl,
          namespace,
          logger: logger.child({ component: 'queues' }),
          lockMs: config.jobs.queueLockMs,
        })
      : undefined;
  const clusterPrefix = `${namespace}::cluster:`;
  const clusterLog = logger.child({ component: 'cluster' });
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
  // The channels' edit budget the edit queue and /privacy delete's edits share (one process: in memory).
  const editBudget: ChannelBudget =
    channelBudget ??
    new MemoryChannelBudget({
      limit: DEFAULT_EDIT_QUEUE_OPTIONS.channelLimit,
      windowMs: DEFAULT_EDIT_QUEUE_OPTIONS.channelWindowMs,
      finalReserve: DEFAULT_EDIT_QUEUE_OPTIONS.finalReserve,
    });
  const gatewayLease =
    stores.redis && config.discord.interactions.mode === 'gateway'
      ? new GatewayLease({
          redis: stores.redis,
          prefix: clusterPrefix,
          instanceId: config.instanceId,
          logger: clusterLog,
        })
      : undefined;

  // ---- Community: settings, fair use, credits, gallery.
  const jobKeys = new JobKeys();
  const guildSettings = new GuildSettingsStore({ kv: stores.kv, defaults: config.community.defaults });
  // A slot is held at most as long as a job can run (then it times out and frees it anyway).
  const ledger = new FairUseLedger({
    kv: stores.kv,
    slotTtlMs: config.jobs.maxDurationMs + 3_600_000,
    operatorDailyCredits: config.operator.dailyCredits,
    now,
    onCountError: (err, key) => logger.warn({ err, key }, 'could not count today’s credits'),
  });
  metrics.operatorDailyCredits.set(config.operator.dailyCredits);
  // Every outbound download (photos, result files) goes through one SSRF-safe downloader.
  const outboundAllow = compileAllowList(config.outbound.allow);
  const downloader = createSafeDownloader();
  // Where each job was posted in public, kept past the job records' retention.
  const publicPosts = new PublicPosts({ kv: stores.kv, indexes: stores.indexes });
  const gallery = new GalleryPoster({
    rest: botRest,
    settings: guildSettings,
    recordPost: async (jobId, galleryPost) => {
      const r = await stores.jobs.apply(jobId, { galleryPost, at: now() });
      if (r) await publicPosts.recordJob(r.job);
    },
    kv: stores.kv,
    logger: logger.child({ component: 'gallery' }),
    now,
    downloader,
    allow: outboundAllow,
    // One budget for the process: concurrent posts wait for memory rather than exceed it.
    memory: new ByteBudget(GALLERY_MEMORY_BYTES),
    render: jobRender,
    ...(channelBudget ? { budget: channelBudget } : {}),
  });
  const community = new CommunityService({
    settings: guildSettings,
    ledger,
    costs: config.community.costs,
    personal: config.userInstall,
    operator: config.operator,
    jobMaxDurationMs: config.jobs.maxDurationMs,
    logger: logger.child({ component: 'community' }),
    gallery,
    metrics,
  });

  // ---- Jobs: lifecycle, keeper checks, message updates, after-final work.
  const renderers: JobRenderers = { render: jobRender.renderJob, renderReply: renderThreadLine };
  // Built in a cycle (the lifecycle queues work whose runners call the lifecycle back): the
  // runners reach `lifecycle` and `watch` through closures, called only once both exist.
  const trainingServices = createTrainingServices({
    config,
    kv: stores.kv,
    jobState: async (jobId) => (await stores.jobs.get(jobId))?.state,
    refreshUrls: async (urls) =>
      (await botRest.post('/attachments/refresh-urls', { body: { attachment_urls: urls } })) as unknown,
    download: createSafePhotoDownloader({
      downloader,
      allow: outboundAllow,
      maxBytes: config.photos.maxBytes,
    }),
    logger: logger.child({ component: 'training' }),
    now,
  });
  const training = trainingServices.sessions;
  const afterFinalWork = new AfterFinalWork({
    store: stores.jobs,
    lifecycle: { mark: (id, flags) => lifecycle.mark(id, flags) },
    // A training upload's session closes (finished) or is opened again for Retry (failed).
    run: async (job) => {
      await Promise.all([community.jobEnded(job), trainingServices.jobEnded(job)]);
    },
  });
  const check = (jobId: string) => watch.check(jobId);
  // AutoMod refusing a job's text never fails the job: it is shown without it (one note to the member).
  const autoMod = new AutoModWithholding({
    lifecycle: { withholdText: (id) => lifecycle.withholdText(id) },
    rest: botRest,
    logger: logger.child({ component: 'moderation' }),
    now,
  });
  // Session messages (training photos) always go through the in-process queue; job messages
  // too in embedded mode.
  const sessionEdits = new EditQueue({
    transport,
    logger: logger.child({ component: 'edits' }),
    now,
    channelBudget: editBudget,
    onMessageGone: (key, reason) => {
      if (key.endsWith(':reply') || key.startsWith('training-message:')) return;
      logger.info({ jobId: key, reason }, 'job message is gone; edits stopped');
      void lifecycle.mark(key, { messageGone: true }).catch(() => undefined);
    },
    onDelivered: (key, d) => {
      metrics.webhookToEdit.observe((now() - d.pushedAt) / 1000);
      if (d.final && !key.includes(':')) {
        void lifecycle.mark(key, { finalShown: true }).catch(() => undefined);
      }
    },
    metrics: {
      editsSent: (route, outcome) => metrics.editsSent.inc({ route, outcome }),
      queueDepth: (n) => metrics.editQueueDepth.set(n),
    },
  });
  // A personal job's result sent by DM: indexed with its public posts, so /privacy delete reaches it.
  const indexDirectMessage = async (jobId: string, posted: { channelId: string; messageId: string }) => {
    const job = await stores.jobs.get(jobId);
    if (job) await publicPosts.recordDirectMessage(job, posted);
  };
  let messages: MessageUpdates & Partial<EditDelivery>;
  let checks: CheckScheduler;
  let afterFinal: AfterFinalQueue;
  let bullEdits: BullJobEdits | undefined;
  let queuedMessages: QueuedJobMessages | undefined;
  if (bull && channelBudget && queues) {
    const [, { BullJobEdits }, { BullChecks, BullAfterFinal }] = queues;
    bullEdits = new BullJobEdits(bull, {
      store: stores.jobs,
      lifecycle: { mark: (id, flags) => lifecycle.mark(id, flags) },
      transport,
      budget: channelBudget,
      renderers,
      marks: bull.connection,
      logger: logger.child({ component: 'edits' }),
      metrics,
      now,
      onAutoMod: (id) => autoMod.refused(id, 'message'),
      onDmNoticeDue: (id) => lifecycle.noticeDm(id),
      onDirectMessage: (id, posted) => indexDirectMessage(id, posted),
    });
    messages = bullEdits;
    checks = new BullChecks(bull, check, {
      retryMs: config.jobs.pollInitialMs,
      logger: logger.child({ component: 'jobs' }),
    });
    afterFinal = new BullAfterFinal(bull, (id) => afterFinalWork.runFor(id));
  } else {
    queuedMessages = new QueuedJobMessages({
      edits: sessionEdits,
      renderers,
      now,
      onAutoMod: (id) => void autoMod.refused(id, 'message'),
      // What an edit learned is stored with the job: after a restart the queue still knows it.
      learned: {
        tokenRefused: (id) => void lifecycle.mark(id, { tokenRefused: true }).catch(() => undefined),
        dmRefused: (id) => void lifecycle.mark(id, { dmRefused: true }).catch(() => undefined),
        dmNoticeDue: (id) => void lifecycle.noticeDm(id).catch(() => undefined),
        directMessage: (id, posted) =>
          void indexDirectMessage(id, posted).catch((err: unknown) =>
            logger.warn({ err, jobId: id }, 'could not index the DM of a result'),
          ),
      },
    });
    messages = queuedMessages;
    const timers = new TimerChecks({
      logger: logger.child({ component: 'jobs' }),
      retryMs: config.jobs.pollInitialMs,
    });
    timers.start(check);
    checks = timers;
    afterFinal = new InProcessAfterFinal({
      work: afterFinalWork,
      logger: logger.child({ component: 'jobs' }),
    });
  }
  const lifecycleOptions = {
    ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
    maxDurationMs: config.jobs.maxDurationMs,
    pollInitialMs: config.jobs.pollInitialMs,
    pollMaxMs: config.jobs.pollMaxMs,
    webhookSilenceMs: config.jobs.webhookSilenceMs,
  };
  const lifecycle: JobLifecycle = new JobLifecycle({
    store: stores.jobs,
    checks,
    messages,
    afterFinal,
    jobKeys,
    logger: logger.child({ component: 'jobs' }),
    metrics,
    now,
    options: lifecycleOptions,
    outOfCredits: () => account.outOfCredits(),
    submissionTaken: () => account.submissionSucceeded(),
  });
  const watch: JobWatch = new JobWatch({
    store: stores.jobs,
    lifecycle,
    reader,
    messages,
    afterFinal,
    logger: logger.child({ component: 'jobs' }),
    metrics,
    now,
    options: {
      ...lifecycleOptions,
      webhooks: config.publicUrl !== undefined,
      startedAt: now(),
      // The longest a submission can take: the slowest request, its 429 waits, a margin.
      submitGraceMs:
        Math.max(config.media.timeoutMs, config.media.upscaleTimeoutMs) + SUBMIT_WAIT_BOUND_MS + 60_000,
    },
  });

  const retention = {
    jobDays: config.privacy.retentionDays,
    consentDays: config.privacy.consentRetentionDays,
    sessionHours: Math.round(config.photos.sessionTtlMs / 3_600_000),
  };
  const context: BotContext = {
    logger: logger.child({ component: 'commands' }),
    jobs: lifecycle,
    records: stores.jobs,
    media,
    render: jobRender,
    tasks: urgentReader,
    taskLookup: new TaskLookup({ reader: urgentReader }),
    retries: new RetryGuard({
      kv: stores.kv,
      records: stores.jobs,
      runningTtlMs: config.jobs.maxDurationMs + 3_600_000,
      now,
    }),
    account,
    showAccountBalance: config.media.showAccountBalance,
    training,
    photoUpload: trainingServices.uploader,
    consent: trainingServices.consent,
    edits: sessionEdits,
    community,
    settings: guildSettings,
    ledger,
    costs: config.community.costs,
    threads: createThreadApi(botRest),
    limits: { maxImageBytes: config.photos.maxBytes },
    memberData: new MemberData({
      jobs: stores.jobs,
      // The job's message and, with a thread, its channel line (JobRenderers' keys).
      stopEdits: (jobId) => {
        sessionEdits.forget(jobId);
        sessionEdits.forget(replyKey(jobId));
      },
      sessions: training,
      consents: trainingServices.consent.records,
      posts: publicPosts,
      cleanup: new PublicCleanup({
        rest: botRest,
        interactionRest,
        interactionFreshMs: DEFAULT_EDIT_QUEUE_OPTIONS.interactionFreshMs,
        budget: editBudget,
        gallery,
        renderRemoved: renderRemovedAtRequest,
        threadName: (t) =>
          jobRender.threadName({ id: t.jobId, operation: t.operation, params: {}, textWithheld: true }),
        logger: logger.child({ component: 'privacy' }),
        now,
      }),
      kv: stores.kv,
      community,
      retention,
      logger: logger.child({ component: 'privacy' }),
      now,
    }),
    retention,
    imageTargets: new ImageTargets({ kv: stores.kv, now }),
    userInstall: config.userInstall.enabled,
    publicPosts,
    autoMod,
    moderation: new ResultTakeDown({
      store: stores.jobs,
      rest: botRest,
      gallery,
      posts: publicPosts,
      renderRemoved,
      threadName: jobRender.threadName,
      logger: logger.child({ component: 'moderation' }),
      now,
    }),
    now,
  };
  const retentionSweeper = new RetentionSweeper({
    jobs: stores.jobs,
    retentionMs: config.privacy.retentionDays * 86_400_000,
    logger: logger.child({ component: 'retention' }),
    now,
  });

  // ---- Interactions: the same router whichever way they arrive.
  const route = createInteractionRouter(commands, components, context);
  const { interactions: interactionMode } = config.discord;
  const ackAfterMs =
    opts.interactionAckDeadlineMs ??
    (interactionMode.mode === 'http' ? HTTP_ACK_AFTER_MS : GATEWAY_ACK_AFTER_MS);
  const interactionLog = logger.child({ component: 'interactions' });
  // A 40060 is our own lost answer only when REST had to send that callback again.
  const callbackRetried = trackCallbackRetries(callbackRest);
  const run = (raw: APIInteraction, transport?: AckTransport, receivedAt?: number): void => {
    const name = 'data' in raw && raw.data && 'name' in raw.data ? raw.data.name : '';
    const i = new BotInteraction(raw, {
      api: api.interactions,
      callbackRetried,
      logger: interactionLog,
      ackAfterMs,
      ephemeralByDefault: route.ephemeralCommand(name),
      ...(transport ? { transport } : {}),
      ...(receivedAt !== undefined ? { receivedAt } : {}),
    });
    void route(i)
      .catch((err: unknown) => logger.error({ err }, 'interaction router failed'))
      .finally(() => i.dispose());
  };

  const claimInteraction = createInteractionClaim(stores.kv, now);
  const endpoint =
    interactionMode.mode === 'http'
      ? new HttpInteractionEndpoint({
          logger: interactionLog,
          // Set-if-absent in the store every instance shares: one run per interaction id.
          claim: claimInteraction,
          run: (raw, exchange, receivedAt) => run(raw, exchange, receivedAt),
        })
      : undefined;

  const gateway =
    interactionMode.mode === 'gateway'
      ? new Gateway({
          token: config.discord.token,
          rest: botRest,
          kv: stores.kv,
          logger: logger.child({ component: 'gateway' }),
          // Fenced by the lease (an instance that lost it never acts on what its dying connection
          // still delivers), then claimed like an HTTP interaction: a replayed dispatch runs once.
          onInteraction: gatewayIntake({
            logger: interactionLog,
            claim: claimInteraction,
            ...(gatewayLease ? { holdsGateway: () => gatewayLease.verify() } : {}),
            run: (raw, receivedAt) => run(raw, undefined, receivedAt),
            answer: async (raw, body) => {
              await callbackRest.post(Routes.interactionCallback(raw.id, raw.token), { body, auth: false });
            },
          }),
        })
      : undefined;
  // http mode: Discord is "ready" once the token has been checked over REST at start.
  let restReady = false;

  const discordReady = (): boolean =>
    endpoint ? restReady : gatewayLease && !gatewayLease.holds() ? true : (gateway?.isReady() ?? false);
  const server = await buildServer({
    logger,
    trustProxy: config.http.trustProxy,
    webhook: {
      store: stores.jobs,
      applyResult: (jobId, result) => lifecycle.applyResult(jobId, result, 'webhook'),
      operations: mediaOperations,
      metrics,
      keys: jobKeys,
      ...(opts.webhookAuthFailures ? { authFailures: opts.webhookAuthFailures } : {}),
    },
    health: {
      // Gateway mode on Redis: standby instances (another holds the gateway) are ready, they serve webhooks and jobs.
      discordReady,
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
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : await buildMetricsServer({
          logger,
          registry: metrics.registry,
          ...(config.metrics.token !== undefined ? { token: config.metrics.token } : {}),
        });

  const edits: EditDelivery & { sessions: EditQueue } = {
    sessions: sessionEdits,
    async drain(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const local = await sessionEdits.drain(timeoutMs);
      const remote = bullEdits ? await bullEdits.drain(Math.max(0, deadline - Date.now())) : true;
      return local && remote;
    },
  };

  let stopping: Promise<void> | undefined;
  return {
    mode: bull ? 'redis' : 'embedded',
    gatewayLease,
    server,
    jobs: lifecycle,
    watch,
    edits,
    checks,
    metrics,
    context,
    store: stores.jobs,
    kv: stores.kv,
    rest: botRest,
    discordReady,
    async start() {
      await inPhase('store', () => trainingServices.start());
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
      account.start();
      if (metricsServer && config.metrics.port !== undefined) {
        const metricsPort = config.metrics.port;
        const metricsUrl = await inPhase('metrics-http', () =>
          metricsServer.listen({ host: config.http.host, port: metricsPort }),
        );
        logger.info({ url: `${metricsUrl}/metrics` }, 'metrics listening');
      }
      if (endpoint) {
        // No gateway connection: check the token once over REST (a bad one stops the start).
        const me = (await inPhase('discord', () => botRest.get(Routes.user('@me')))) as Partial<APIUser>;
        restReady = true;
        logger.info(
          { user: me.username, interactions: `${url}/interactions` },
          'Discord REST ready; interactions arrive over HTTP (no gateway)',
        );
      } else if (gateway && gatewayLease) {
        let first: Promise<void> | undefined;
        await inPhase('store', () =>
          gatewayLease.start({
            acquired: () => {
              metrics.gatewayLeader.set(1);
              const connecting = gateway.connect();
              first ??= connecting;
              return connecting;
            },
            lost: async () => {
              metrics.gatewayLeader.set(0);
              await gateway.disconnect({ keepSession: false });
            },
          }),
        );
        // The first holder connects as a lone bot does, and a failure stops the start the same way.
        if (first) await inPhase('discord', () => first as Promise<void>);
        else logger.info('another instance holds the gateway; this one serves webhooks and jobs (standby)');
      } else if (gateway) {
        await inPhase('discord', () => gateway.connect());
      }
      let sync: SyncResult[] | undefined;
      try {
        sync = await syncCommandScopes({
          rest: botRest,
          applicationId: config.discord.applicationId,
          scopes: registrationPlan({
            userInstall: config.userInstall.enabled,
            guildId: config.discord.guildId,
          }),
          logger,
        });
      } catch (err) {
        // The bot still serves already-registered commands; `npm run register` retries on demand.
        logger.error({ err }, 'could not register slash commands');
      }
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
        const step = shutdownSteps(logger);
        // New commands stop first (the next holder resumes this session: a graceful stop hands
        // the gateway over), then webhooks and HTTP interactions.
        await step('gateway', () => gateway?.disconnect({ keepSession: true }));
        await step('gateway lease', () => gatewayLease?.stop());
        await step('http', () => server.close());
        await step('interactions endpoint', () => endpoint?.close());
        await step('metrics', () => metricsServer?.close());
        account.stop();
        lifecycle.stop();
        trainingServices.stop();
        await step('retention sweep', () => retentionSweeper.stop());
        await step('checks', () => checks.close());
        await step('after-final work', () => afterFinal.close());
        await step('edit queue', () => bullEdits?.close());
        queuedMessages?.close();
        await step(
          'message edits',
          async () => {
            if (!(await sessionEdits.drain(drainMs)))
              logger.warn(
                { pending: sessionEdits.depth() },
                'some message edits were not delivered before shutdown',
              );
          },
          drainMs + 1000,
        );
        sessionEdits.close();
        await step('queues', () => bull?.close());
        taskReader.close();
        await step('media client', () => media.close());
        await step('downloader', () => downloader.close());
        await step('store', () => stores.close());
        await step('data dir lock', () => dataDirLock?.release());
        logger.info('stopped');
      })();
      return stopping;
    },
  };
}
