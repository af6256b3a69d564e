import type { REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { BotContext } from '../commands/types.js';
import type { CommunityService } from '../services/community/community.js';
import type { FairUseLedger } from '../services/community/fair-use.js';
import type { GalleryPoster } from '../services/community/gallery.js';
import type { GuildSettingsStore } from '../services/community/settings.js';
import { createThreadApi } from '../services/community/threads.js';
import type { ChannelBudget } from '../services/discord/edits/channel-budget.js';
import { DEFAULT_EDIT_QUEUE_OPTIONS, type EditQueue } from '../services/discord/edits/edit-queue.js';
import { encodeEditKey } from '../services/discord/edits/edit-key.js';
import { FirstAnswers } from '../services/discord/interactions/first-answers.js';
import {
  renderRemoved,
  renderRemovedAtRequest,
  type JobRenderer,
} from '../services/discord/render/job-render.js';
import { ImageTargets } from '../services/jobs/image-targets.js';
import type { TaskReading } from '../services/media/ports.js';
import type { JobLifecycle } from '../services/jobs/lifecycle.js';
import { RetryGuard } from '../services/jobs/retry-guard.js';
import type { AccountMonitor } from '../services/media/account-monitor.js';
import type { MediaClient } from '../services/media/client.js';
import { TaskLookup } from '../services/media/task-lookup.js';
import type { AutoModWithholding } from '../services/moderation/automod.js';
import { ResultTakeDown } from '../services/moderation/take-down.js';
import { MemberData } from '../services/privacy/member-data.js';
import { PublicCleanup } from '../services/privacy/public-cleanup.js';
import type { PublicPosts } from '../services/privacy/public-posts.js';
import type { Stores } from '../services/store/index.js';
import type { TrainingServices } from '../services/training/index.js';

/** What every command and component handler is given: the services, read-only where it can be. */
export function buildContext(deps: {
  config: Config;
  stores: Stores;
  lifecycle: JobLifecycle;
  media: MediaClient;
  render: JobRenderer;
  urgentReader: TaskReading;
  account: AccountMonitor;
  training: TrainingServices;
  sessionEdits: EditQueue;
  community: CommunityService;
  settings: GuildSettingsStore;
  ledger: FairUseLedger;
  botRest: REST;
  interactionRest: REST;
  editBudget: ChannelBudget;
  gallery: GalleryPoster;
  publicPosts: PublicPosts;
  autoMod: AutoModWithholding;
  logger: Logger;
  now: () => number;
}): BotContext {
  const {
    config,
    stores,
    render: jobRender,
    urgentReader,
    sessionEdits,
    botRest,
    gallery,
    logger,
    now,
  } = deps;
  const trainingServices = deps.training;
  const retention = {
    jobDays: config.privacy.retentionDays,
    consentDays: config.privacy.consentRetentionDays,
    sessionHours: Math.round(config.photos.sessionTtlMs / 3_600_000),
  };
  return {
    logger: logger.child({ component: 'commands' }),
    firstAnswers: new FirstAnswers(),
    jobs: deps.lifecycle,
    records: stores.jobs,
    media: deps.media,
    render: jobRender,
    tasks: urgentReader,
    taskLookup: new TaskLookup({ reader: urgentReader }),
    retries: new RetryGuard({
      kv: stores.kv,
      records: stores.jobs,
      runningTtlMs: config.jobs.maxDurationMs + 3_600_000,
      now,
    }),
    account: deps.account,
    showAccountBalance: config.media.showAccountBalance,
    training: trainingServices.sessions,
    photoUpload: trainingServices.uploader,
    consent: trainingServices.consent,
    edits: sessionEdits,
    community: deps.community,
    settings: deps.settings,
    ledger: deps.ledger,
    costs: config.community.costs,
    threads: createThreadApi(botRest),
    limits: { maxImageBytes: config.photos.maxBytes },
    memberData: new MemberData({
      jobs: stores.jobs,
      // The job's message and, with a thread, its channel line (JobRenderers' keys).
      stopEdits: (jobId) => {
        sessionEdits.forget(encodeEditKey({ kind: 'job', jobId, target: 'message' }));
        sessionEdits.forget(encodeEditKey({ kind: 'job', jobId, target: 'reply' }));
      },
      sessions: trainingServices.sessions,
      consents: trainingServices.consent.records,
      posts: deps.publicPosts,
      cleanup: new PublicCleanup({
        rest: botRest,
        interactionRest: deps.interactionRest,
        interactionFreshMs: DEFAULT_EDIT_QUEUE_OPTIONS.interactionFreshMs,
        budget: deps.editBudget,
        gallery,
        renderRemoved: renderRemovedAtRequest,
        threadName: (t) =>
          jobRender.threadName({ id: t.jobId, operation: t.operation, params: {}, textWithheld: true }),
        logger: logger.child({ component: 'privacy' }),
        now,
      }),
      kv: stores.kv,
      community: deps.community,
      retention,
      logger: logger.child({ component: 'privacy' }),
      now,
    }),
    retention,
    imageTargets: new ImageTargets({ kv: stores.kv, now }),
    userInstall: config.userInstall.enabled,
    publicPosts: deps.publicPosts,
    autoMod: deps.autoMod,
    moderation: new ResultTakeDown({
      store: stores.jobs,
      rest: botRest,
      gallery,
      posts: deps.publicPosts,
      renderRemoved,
      threadName: jobRender.threadName,
      logger: logger.child({ component: 'moderation' }),
      now,
    }),
    now,
  };
}
