import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.js';
import type { ChannelBudget } from '../discord/edits/channel-budget.js';
import type { DiscordTransport } from '../discord/discord-transport.js';
import {
  DEFAULT_EDIT_QUEUE_OPTIONS,
  classify,
  editOutcome,
  type EditRoute,
} from '../discord/edits/edit-queue.js';
import { hasMessage, type JobRenderers } from '../discord/edits/job-messages.js';
import { withoutFreeText } from '../discord/render/withheld.js';
import { isFinal } from '../store/merge.js';
import type { JobLifecycle } from '../jobs/lifecycle.js';
import type { MessageUpdates } from '../jobs/ports.js';
import type { JobMessageRef, JobRecord, JobStore } from '../store/types.js';
import { delayJob, queueWithWorker, stillOurs, type BullContext, type QueueHandle } from './bull.js';
import { ProgressCoalescer } from './progress-coalescer.js';

/**
 * The Discord edits of job messages on BullMQ. A change merged on any instance
 * adds an edit job for the message (deduplicated per message with
 * `keepLastIfActive`: never two edits of one message at once, at most one
 * waiting); whichever worker runs it renders the *stored* record, so the latest
 * state wins. Finals go first (priority) and are retried until they land or the
 * message is gone; a 429 delays the edit by Discord's `retry_after`.
 *
 * What no engine gives stays ours: the shared per-channel bot-token budget
 * (ChannelBudget on Redis, finals first) and, on the interaction route, progress
 * edits of one message spaced PROGRESS_SPACING_MS apart (at most 3 in Discord's
 * 5 s window, so a final always finds a slot).
 */

type Target = 'message' | 'reply';
interface EditData {
  jobId: string;
  target: Target;
  /** Delayed only to space progress edits (a final may cut it short); not for a 429 or a budget wait. */
  spaced?: boolean;
}

/** Interaction route: two progress edits of one message at least this far apart (3 per 5 s window). */
const PROGRESS_SPACING_MS = 2000;
/** Progress edits give up after this many failed sends (the next state will try again); process() decides. */
const PROGRESS_ATTEMPTS = 3;
/**
 * Every edit job's BullMQ attempts (capped backoff: well over a day), then the keeper asks again.
 * Progress ones too: a final folded into a waiting progress edit (deduplication keeps the waiting
 * job and its options) must be retried like a final, not dropped after the progress's three.
 */
const EDIT_ATTEMPTS = 2000;
/** Progress changes of one message queued at most once per this window (plus one at its end). */
const PROGRESS_COALESCE_MS = 250;
const FINAL_PRIORITY = 1;
const PROGRESS_PRIORITY = 10;

const key = (d: EditData): string => `${d.target === 'reply' ? 'r' : 'm'}-${d.jobId}`;

export interface JobEditsDeps {
  store: Pick<JobStore, 'get'>;
  lifecycle: Pick<JobLifecycle, 'mark'>;
  transport: DiscordTransport;
  budget: ChannelBudget;
  renderers: JobRenderers;
  /** SET/GET of the progress spacing marks (the queue's connection). */
  marks: {
    get(key: string): Promise<string | null | undefined>;
    set(key: string, value: string, options: { expiration: { type: 'PX'; value: number } }): Promise<unknown>;
  };
  logger: Logger;
  metrics?: Metrics;
  now?: () => number;
  concurrency?: number;
  /** AutoMod refused the job's text: mark it withheld (its message is then queued again). */
  onAutoMod?: (jobId: string) => Promise<void>;
  /** The edit reached Discord (latency metric, tests). */
  onDelivered?: (jobId: string, final: boolean) => void;
}

export class BullJobEdits implements MessageUpdates {
  private readonly handle: QueueHandle<EditData>;
  private readonly now: () => number;
  private readonly log: Logger;
  /** Progress edits of a message are spaced 2 s apart anyway: a webhook storm need not queue each change. */
  private readonly progress = new ProgressCoalescer(
    PROGRESS_COALESCE_MS,
    (jobId) => void this.add({ jobId, target: 'message' }, false),
  );

  constructor(
    private readonly ctx: BullContext,
    private readonly deps: JobEditsDeps,
  ) {
    this.now = deps.now ?? Date.now;
    this.log = deps.logger;
    this.handle = queueWithWorker<EditData>(ctx, 'edits', (job, token) => this.process(job, token), {
      concurrency: deps.concurrency ?? 64,
      settings: {
        // Capped exponential backoff with jitter: 1 s doubling to a minute.
        backoffStrategy: (attempts: number) =>
          Math.round(Math.min(60_000, 1000 * 2 ** Math.max(0, attempts - 1)) * (0.5 + Math.random() / 2)),
      },
    });
  }

  jobChanged(job: JobRecord): void {
    if (job.finalShownAt !== undefined || job.messageGone === true || !hasMessage(job)) return;
    if (!isFinal(job)) return this.progress.changed(job.id);
    this.progress.flush(job.id);
    void this.add({ jobId: job.id, target: 'message' }, true);
    if (job.reply) void this.add({ jobId: job.id, target: 'reply' }, true);
  }

  private async add(data: EditData, final: boolean): Promise<void> {
    const id = key(data);
    try {
      const added = await this.handle.queue.add('edit', data, {
        deduplication: { id, keepLastIfActive: true },
        priority: final ? FINAL_PRIORITY : PROGRESS_PRIORITY,
        attempts: EDIT_ATTEMPTS,
        backoff: { type: 'custom' },
      });
      // Folded into an edit already waiting (a progress one): a final moves it to the front,
      // and out of a progress spacing delay (finals are not spaced: the spacing keeps their slot).
      if (final && added.id !== undefined) {
        const waiting = await this.handle.queue.getJob(added.id);
        const state = waiting ? await waiting.getState() : undefined;
        if (
          waiting &&
          (state === 'prioritized' || state === 'delayed') &&
          waiting.priority !== FINAL_PRIORITY
        )
          await waiting.changePriority({ priority: FINAL_PRIORITY }).catch(() => undefined);
        if (waiting && state === 'delayed' && waiting.data.spaced === true)
          await waiting.promote().catch(() => undefined);
      }
    } catch (err) {
      // Redis unreachable: the job's keeper shows the final again at its next check.
      this.log.warn({ err, jobId: data.jobId, final }, 'could not queue a message edit');
    }
  }

  /** Edits waiting, delayed or running (all instances). */
  async depth(): Promise<number> {
    const c = await this.handle.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return Object.values(c).reduce((a, b) => a + b, 0);
  }

  /** Resolves true once no edit waits or runs anywhere, false after `timeoutMs`. */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if ((await this.depth().catch(() => 1)) === 0) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  close(): Promise<void> {
    this.progress.close();
    return this.handle.close();
  }

  // ---------------------------------------------------------------- the worker

  private async process(job: Job<EditData>, token: string | undefined): Promise<void> {
    /** Delays this edit, saying whether only for progress spacing (which a final may cut short). */
    const delay = async (ms: number, spaced: boolean) => {
      if ((job.data.spaced === true) !== spaced) await job.updateData({ ...job.data, spaced });
      return delayJob(job, token, ms);
    };
    const { jobId, target } = job.data;
    const record = await this.deps.store.get(jobId);
    if (!record || record.messageGone === true) return;
    const final = isFinal(record);
    if (target === 'message' && record.finalShownAt !== undefined) return;
    if (target === 'reply' && (!record.reply || !final)) return;
    const ref = target === 'reply' ? (record.reply as JobMessageRef) : record.message;
    const now = this.now();
    let route = this.routeOf(ref, now, false);
    if (!route) {
      if (final)
        this.log.error(
          { jobId },
          'final edit not delivered: interaction token expired and no message id known',
        );
      return;
    }
    if (!final && route === 'channel' && now - record.createdAt >= DEFAULT_EDIT_QUEUE_OPTIONS.oldMessageMs)
      return;
    const markKey = `${this.ctx.prefix}:edit-at:${key(job.data)}`;
    if (!final && route === 'interaction') {
      const last = Number((await this.deps.marks.get(markKey)) ?? 0);
      if (now - last < PROGRESS_SPACING_MS) throw await delay(last + PROGRESS_SPACING_MS - now, true);
    }
    const renderAs = (job: JobRecord) =>
      target === 'reply' ? this.deps.renderers.renderReply(job) : this.deps.renderers.render(job, now);
    let payload = renderAs(record);
    let bare = false;
    for (;;) {
      if (route === 'channel') {
        const wait = await this.deps.budget.acquire(ref.channelId, final ? 'final' : 'progress', this.now());
        if (wait > 0) throw await delay(wait, false);
      }
      // A worker paused past its lock must not repeat what the job's new worker sends.
      if (!(await stillOurs(job, token, this.ctx.lockMs))) {
        this.log.warn({ jobId, target }, 'edit job no longer ours (paused past its lock): not sent');
        return;
      }
      const outcome = await this.send(route, ref, payload);
      this.deps.metrics?.editsSent.inc({ route, outcome: editOutcome(outcome) });
      switch (outcome.kind) {
        case 'ok':
          if (!final && route === 'interaction') {
            await this.deps.marks
              .set(markKey, String(this.now()), { expiration: { type: 'PX', value: 10_000 } })
              .catch(() => undefined);
          }
          if (final && target === 'message') await this.markShown(jobId, { finalShown: true });
          this.deps.onDelivered?.(jobId, final);
          return;
        case 'rate_limited':
          if (route === 'channel')
            this.deps.budget.blocked(
              outcome.global ? undefined : ref.channelId,
              this.now() + outcome.retryAfterMs,
            );
          throw await delay(outcome.retryAfterMs, false);
        case 'gone':
          this.log.info({ jobId, target, reason: outcome.reason }, 'job message gone: edits stopped');
          if (target === 'message') await this.markShown(jobId, { messageGone: true });
          return;
        case 'token_invalid': {
          // Discord refused the interaction token: the channel route, at once, if there is one.
          const next = this.routeOf(ref, this.now(), true);
          if (!next) {
            if (final)
              this.log.error(
                { jobId },
                'final edit not delivered: interaction token refused and no message id known',
              );
            return;
          }
          route = next;
          continue;
        }
        case 'old_message':
          if (!final) return;
          throw new Error('old-message edit limit (30046)');
        case 'automod':
          if (record.textWithheld !== true && this.deps.onAutoMod) {
            // The change queues this message again, rendered without the member's text.
            await this.deps.onAutoMod(jobId);
            return;
          }
          if (!bare) {
            // Refused even without the member's text: once more without any free text.
            bare = true;
            payload = renderAs(withoutFreeText(record));
            continue;
          }
          this.log.error({ jobId, target, route, code: outcome.code, final }, 'AutoMod refused the edit');
          return;
        case 'invalid':
          this.log.error(
            { jobId, target, route, code: outcome.code, final },
            'Discord rejected the edit; state dropped',
          );
          return;
        case 'transient':
          if (!final && job.attemptsMade + 1 >= PROGRESS_ATTEMPTS) return;
          throw new Error(outcome.message);
      }
    }
  }

  /**
   * Records that the final landed (or the message is gone), retrying through a Redis blip
   * (up to ~30 s): the edit went out, so this job must not fail and send it again, and the
   * keeper must not ask for it again.
   */
  private async markShown(jobId: string, flags: { finalShown?: true; messageGone?: true }): Promise<void> {
    let delay = 100;
    for (const deadline = Date.now() + 30_000; ; delay = Math.min(delay * 2, 2000)) {
      try {
        await this.deps.lifecycle.mark(jobId, flags);
        return;
      } catch (err) {
        if (Date.now() + delay > deadline) {
          this.log.warn({ err, jobId }, 'could not record the delivered final; it may be shown again');
          return;
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private routeOf(ref: JobMessageRef, now: number, interactionDead: boolean): EditRoute | undefined {
    const i = ref.interaction;
    if (i && !interactionDead && now - i.createdAt < DEFAULT_EDIT_QUEUE_OPTIONS.interactionFreshMs)
      return 'interaction';
    return ref.messageId ? 'channel' : undefined;
  }

  private async send(
    route: EditRoute,
    ref: JobMessageRef,
    payload: ReturnType<JobRenderers['render']>,
  ): Promise<{ kind: 'ok' } | ReturnType<typeof classify>> {
    try {
      if (route === 'interaction' && ref.interaction) {
        await this.deps.transport.editInteractionOriginal(
          ref.interaction.applicationId,
          ref.interaction.token,
          payload,
          ...(ref.interaction.messageId ? [ref.interaction.messageId] : []),
        );
      } else if (ref.messageId) {
        await this.deps.transport.editChannelMessage(ref.channelId, ref.messageId, payload);
      }
      if (route === 'channel') this.deps.budget.settled(ref.channelId, this.now());
      return { kind: 'ok' };
    } catch (err) {
      const failure = classify(err, route);
      if (route === 'channel') {
        if (failure.kind === 'rate_limited') this.deps.budget.released(ref.channelId, this.now());
        else this.deps.budget.settled(ref.channelId, this.now());
      }
      return failure;
    }
  }
}
