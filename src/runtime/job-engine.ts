import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import type { DiscordTransport } from '../services/discord/discord-transport.js';
import type { ChannelBudget } from '../services/discord/edits/channel-budget.js';
import type { EditQueue } from '../services/discord/edits/edit-queue.js';
import { QueuedJobMessages, type JobRenderers } from '../services/discord/edits/job-messages.js';
import { InProcessAfterFinal, type AfterFinalWork } from '../services/jobs/after-final.js';
import type { JobLifecycle } from '../services/jobs/lifecycle.js';
import type { AfterFinalQueue, CheckScheduler, MessageUpdates } from '../services/jobs/ports.js';
import { TimerChecks } from '../services/jobs/timer-checks.js';
import type { AutoModWithholding } from '../services/moderation/automod.js';
import type { BullContext } from '../services/queues/bull.js';
import type { BullJobEdits } from '../services/queues/job-edits.js';
// Types only: the modules themselves are loaded on Redis alone (see runtime/redis.ts).
import type * as JobEditsModule from '../services/queues/job-edits.js';
import type * as JobQueuesModule from '../services/queues/job-queues.js';
import type * as PeriodicModule from '../services/queues/periodic.js';
import type { JobStore } from '../services/store/types.js';
import type { Disposers } from './disposers.js';
import type { PostedMessage } from '../services/shared/message-ref.js';

/** The Discord edits of job messages, whichever way they are delivered (tests, benches). */
export interface EditDelivery {
  /** Resolves true once no edit waits or runs, false after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean>;
}

/** BullMQ, opened on Redis only (the embedded store never loads it). */
export interface Queues {
  bull: BullContext & { close(): Promise<void> };
  modules: {
    edits: typeof JobEditsModule;
    jobs: typeof JobQueuesModule;
    periodic: typeof PeriodicModule;
  };
}

/** How job work is carried: BullMQ on Redis (any number of instances), in process otherwise. */
export interface JobEngine {
  messages: MessageUpdates & Partial<EditDelivery>;
  checks: CheckScheduler;
  afterFinal: AfterFinalQueue;
  /** Redis: the durable edit queue of job messages. */
  bullEdits: BullJobEdits | undefined;
  /** Embedded: job messages over the in-process edit queue. */
  queuedMessages: QueuedJobMessages | undefined;
}

export interface JobEngineDeps {
  queues: Queues | undefined;
  /** The cluster-wide channel budget (Redis only). */
  channelBudget: ChannelBudget | undefined;
  store: JobStore;
  /** Reached through closures: the lifecycle is built after the engine it uses. */
  lifecycle: Pick<JobLifecycle, 'mark' | 'noticeDm'>;
  transport: DiscordTransport;
  renderers: JobRenderers;
  sessionEdits: EditQueue;
  autoMod: AutoModWithholding;
  afterFinalWork: AfterFinalWork;
  /** One check of a job; resolves the delay before the next, if any. */
  check: (jobId: string) => Promise<number | undefined>;
  indexDirectMessage: (jobId: string, posted: PostedMessage) => Promise<void>;
  pollInitialMs: number;
  disposers: Disposers;
  logger: Logger;
  metrics: Metrics;
  now: () => number;
}

/** Builds the engine and registers its stops: checks first, then after-final work, then the edits. */
export function createJobEngine(deps: JobEngineDeps): JobEngine {
  const engine = buildEngine(deps);
  const { disposers } = deps;
  const { queuedMessages, bullEdits } = engine;
  if (queuedMessages)
    disposers.add({ name: 'job messages', close: () => queuedMessages.close(), inline: true });
  disposers.add({ name: 'edit queue', close: () => bullEdits?.close() });
  disposers.add({ name: 'after-final work', close: () => engine.afterFinal.close() });
  disposers.add({ name: 'checks', close: () => engine.checks.close() });
  return engine;
}

function buildEngine(deps: JobEngineDeps): JobEngine {
  const { queues, channelBudget, lifecycle, autoMod, logger, now } = deps;
  if (queues && channelBudget) {
    const { bull } = queues;
    const bullEdits = new queues.modules.edits.BullJobEdits(bull, {
      store: deps.store,
      lifecycle: { mark: (id, flags) => lifecycle.mark(id, flags) },
      transport: deps.transport,
      budget: channelBudget,
      renderers: deps.renderers,
      marks: bull.connection,
      logger: logger.child({ component: 'edits' }),
      metrics: deps.metrics,
      now,
      onAutoMod: (id) => autoMod.refused(id, 'message'),
      onDmNoticeDue: (id) => lifecycle.noticeDm(id),
      onDirectMessage: (id, posted) => deps.indexDirectMessage(id, posted),
    });
    return {
      messages: bullEdits,
      checks: new queues.modules.jobs.BullChecks(bull, deps.check, {
        retryMs: deps.pollInitialMs,
        logger: logger.child({ component: 'jobs' }),
      }),
      afterFinal: new queues.modules.jobs.BullAfterFinal(bull, (id) => deps.afterFinalWork.runFor(id)),
      bullEdits,
      queuedMessages: undefined,
    };
  }
  const queuedMessages = new QueuedJobMessages({
    edits: deps.sessionEdits,
    renderers: deps.renderers,
    now,
    onAutoMod: (id) => void autoMod.refused(id, 'message'),
    // What an edit learned is stored with the job: after a restart the queue still knows it.
    learned: {
      tokenRefused: (id) => void lifecycle.mark(id, { tokenRefused: true }).catch(() => undefined),
      dmRefused: (id) => void lifecycle.mark(id, { dmRefused: true }).catch(() => undefined),
      dmNoticeDue: (id) => void lifecycle.noticeDm(id).catch(() => undefined),
      directMessage: (id, posted) =>
        void deps
          .indexDirectMessage(id, posted)
          .catch((err: unknown) => logger.warn({ err, jobId: id }, 'could not index the DM of a result')),
    },
  });
  const timers = new TimerChecks({
    logger: logger.child({ component: 'jobs' }),
    retryMs: deps.pollInitialMs,
  });
  timers.start(deps.check);
  return {
    messages: queuedMessages,
    checks: timers,
    afterFinal: new InProcessAfterFinal({
      work: deps.afterFinalWork,
      logger: logger.child({ component: 'jobs' }),
    }),
    bullEdits: undefined,
    queuedMessages,
  };
}
