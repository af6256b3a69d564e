import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { CommunityService } from '../services/community/community.js';
import type { ChannelBudget } from '../services/discord/edits/channel-budget.js';
import { jobMessageOf } from '../services/discord/edits/edit-key.js';
import { EditQueue } from '../services/discord/edits/edit-queue.js';
import type { JobRenderers } from '../services/discord/edits/job-messages.js';
import { AfterFinalWork } from '../services/jobs/after-final.js';
import { JobLifecycle } from '../services/jobs/lifecycle.js';
import { JobWatch } from '../services/jobs/job-watch.js';
import type { CheckScheduler } from '../services/jobs/ports.js';
import { AutoModWithholding } from '../services/moderation/automod.js';
import type { PublicPosts } from '../services/privacy/public-posts.js';
import type { Stores } from '../services/store/index.js';
import type { TrainingServices } from '../services/training/index.js';
import type { JobKeys } from '../webhooks/job-keys.js';
import type { DiscordRest } from './discord-rest.js';
import type { Disposers } from './disposers.js';
import { createJobEngine, type EditDelivery, type Queues } from './job-engine.js';
import { SUBMIT_WAIT_BOUND_MS, type MediaSide } from './media.js';
import type { PostedMessage } from '../services/shared/message-ref.js';

/** Jobs: the lifecycle, its watch, the edits of their messages, what runs after a final result. */
export interface Jobs {
  lifecycle: JobLifecycle;
  watch: JobWatch;
  checks: CheckScheduler;
  /** Edits of job messages (in process or BullMQ) and of session messages (in process). */
  edits: EditDelivery & { sessions: EditQueue };
  autoMod: AutoModWithholding;
}

export function createJobs(deps: {
  config: Config;
  stores: Stores;
  queues: Queues | undefined;
  channelBudget: ChannelBudget | undefined;
  editBudget: ChannelBudget;
  rest: DiscordRest;
  mediaSide: MediaSide;
  renderers: JobRenderers;
  training: TrainingServices;
  community: CommunityService;
  publicPosts: PublicPosts;
  jobKeys: JobKeys;
  disposers: Disposers;
  logger: Logger;
  metrics: Metrics;
  now: () => number;
}): Jobs {
  const { config, stores, mediaSide, training, disposers, logger, metrics, now } = deps;
  // Built in a cycle (the lifecycle queues work whose runners call the lifecycle back): the
  // runners reach `lifecycle` and `watch` through closures, called only once both exist.
  const lateLifecycle = {
    mark: (id: string, flags: Parameters<JobLifecycle['mark']>[1]) => lifecycle.mark(id, flags),
    noticeDm: (id: string) => lifecycle.noticeDm(id),
  };
  const afterFinalWork = new AfterFinalWork({
    store: stores.jobs,
    lifecycle: lateLifecycle,
    // A training upload's session closes (finished) or is opened again for Retry (failed).
    run: async (job) => {
      await Promise.all([deps.community.jobEnded(job), training.jobEnded(job)]);
    },
  });
  const check = (jobId: string) => watch.check(jobId);
  // AutoMod refusing a job's text never fails the job: it is shown without it (one note to the member).
  const autoMod = new AutoModWithholding({
    lifecycle: { withholdText: (id) => lifecycle.withholdText(id) },
    rest: deps.rest.botRest,
    logger: logger.child({ component: 'moderation' }),
    now,
  });
  // Session messages (training photos) always go through the in-process queue; job messages
  // too in embedded mode.
  const sessionEdits = new EditQueue({
    transport: deps.rest.transport,
    logger: logger.child({ component: 'edits' }),
    now,
    channelBudget: deps.editBudget,
    onMessageGone: (key, reason) => {
      const jobId = jobMessageOf(key);
      if (jobId === undefined) return;
      logger.info({ jobId, reason }, 'job message is gone; edits stopped');
      void lifecycle.mark(jobId, { messageGone: true }).catch(() => undefined);
    },
    onDelivered: (key, d) => {
      metrics.webhookToEdit.observe((now() - d.pushedAt) / 1000);
      const jobId = jobMessageOf(key);
      if (d.final && jobId !== undefined) {
        void lifecycle.mark(jobId, { finalShown: true }).catch(() => undefined);
      }
    },
    metrics: {
      editsSent: (route, outcome) => metrics.editsSent.inc({ route, outcome }),
      queueDepth: (n) => metrics.editQueueDepth.set(n),
    },
  });
  disposers.add({ name: 'session edits', close: () => sessionEdits.close(), inline: true });
  disposers.add({
    name: 'message edits',
    close: async ({ drainMs }) => {
      if (!(await sessionEdits.drain(drainMs)))
        logger.warn(
          { pending: sessionEdits.depth() },
          'some message edits were not delivered before shutdown',
        );
    },
    timeoutMs: ({ drainMs }) => drainMs + 1000,
  });
  // A personal job's result sent by DM: indexed with its public posts, so /privacy delete reaches it.
  const indexDirectMessage = async (jobId: string, posted: PostedMessage) => {
    const job = await stores.jobs.get(jobId);
    if (job) await deps.publicPosts.recordDirectMessage(job, posted);
  };
  const engine = createJobEngine({
    queues: deps.queues,
    channelBudget: deps.channelBudget,
    store: stores.jobs,
    lifecycle: lateLifecycle,
    transport: deps.rest.transport,
    renderers: deps.renderers,
    sessionEdits,
    autoMod,
    afterFinalWork,
    check,
    indexDirectMessage,
    pollInitialMs: config.jobs.pollInitialMs,
    disposers,
    logger,
    metrics,
    now,
  });
  const { messages, checks, afterFinal, bullEdits } = engine;
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
    jobKeys: deps.jobKeys,
    logger: logger.child({ component: 'jobs' }),
    metrics,
    now,
    options: lifecycleOptions,
    outOfCredits: () => mediaSide.account.outOfCredits(),
    submissionTaken: () => mediaSide.account.submissionSucceeded(),
  });
  const watch: JobWatch = new JobWatch({
    store: stores.jobs,
    lifecycle,
    reader: mediaSide.reader,
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
  const edits: EditDelivery & { sessions: EditQueue } = {
    sessions: sessionEdits,
    async drain(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const local = await sessionEdits.drain(timeoutMs);
      const remote = bullEdits ? await bullEdits.drain(Math.max(0, deadline - Date.now())) : true;
      return local && remote;
    },
  };
  return { lifecycle, watch, checks, edits, autoMod };
}
