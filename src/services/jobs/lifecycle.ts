import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Submitted } from '../media/client.js';
import { MediaOutcomeUnknownError, MediaOutOfCreditsError } from '../media/errors.js';
import type { Operation, TaskResult, WebhookTarget } from '../media/types.js';
import { StoreUnavailableError } from '../store/errors.js';
import { isFinal } from '../store/merge.js';
import type { JobError, JobRecord, JobStore, JobUpdate } from '../store/types.js';
import type { MessageRef } from '../shared/message-ref.js';
import type { Metrics } from '../../metrics.js';
import { jobErrorFromMedia, jobErrorFromResult } from './job-errors.js';
import type { AfterFinalQueue, CheckScheduler, JobSource, MessageUpdates } from './ports.js';

/** Where the webhook route looks up job secrets without a store read. */
export interface JobKeyMemo {
  remember(job: Pick<JobRecord, 'id' | 'secret' | 'operation' | 'taskId'>): void;
}

export interface NewJob {
  /** Chosen by the caller when it reserves a fair-use slot first; default a random UUID. */
  id?: string;
  operation: Operation;
  userId: string;
  message: MessageRef;
  params: JobRecord['params'];
  cost?: number;
  /** The server's language (guild_locale), for the job's public messages. */
  locale?: string;
  /** A personal job (see JobRecord.personal). */
  personal?: boolean;
}

export interface LifecycleOptions {
  /** Set: webhooks requested at `{publicUrl}/webhooks/media/{jobId}`. Unset: polling only. */
  publicUrl?: string;
  maxDurationMs: number;
  pollInitialMs: number;
  pollMaxMs: number;
  webhookSilenceMs: number;
}

export interface LifecycleDeps {
  store: JobStore;
  checks: CheckScheduler;
  messages: MessageUpdates;
  afterFinal: AfterFinalQueue;
  jobKeys?: JobKeyMemo;
  logger: Logger;
  metrics?: Metrics;
  options: LifecycleOptions;
  now?: () => number;
  /** A 402 was seen: the operator's account is out of credits (metric and error line). */
  outOfCredits?: () => void;
  /** A submission was taken by the service: the account has credits again. */
  submissionTaken?: () => void;
}

export type SubmitCall = (
  webhook: WebhookTarget | undefined,
  hooks: { waiting(untilMs: number): void },
) => Promise<Submitted | TaskResult>;

/**
 * The life of a job: stored before the service call (with its keeper scheduled
 * first), submitted once, then moved forward by webhooks, polls and Refresh
 * through the store's monotonic merge. Every visible change goes to the job's
 * message (MessageUpdates renders the stored record); a final state also queues
 * the after-final work. Webhooks and polls may race: the merge makes that harmless.
 */
export class JobLifecycle {
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly deps: LifecycleDeps) {
    this.now = deps.now ?? Date.now;
  }

  get pollingOnly(): boolean {
    return this.deps.options.publicUrl === undefined;
  }

  get options(): LifecycleOptions {
    return this.deps.options;
  }

  /**
   * Stores a new job in `submitting` state. Its keeper (the check that fails it at its
   * maximum duration unless something else happens first) is scheduled before the
   * record is written, so no job can exist without one, whatever dies when.
   * Throws StoreUnavailableError when the store is down.
   */
  async create(input: NewJob): Promise<JobRecord> {
    const now = this.now();
    const job: JobRecord = {
      id: input.id ?? randomUUID(),
      secret: randomBytes(24).toString('hex'),
      operation: input.operation,
      userId: input.userId,
      message: input.message,
      params: input.params,
      ...(input.cost !== undefined ? { cost: input.cost } : {}),
      ...(input.locale !== undefined ? { locale: input.locale } : {}),
      ...(input.personal ? { personal: true } : {}),
      state: 'submitting',
      percentage: 0,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    try {
      await this.deps.checks.schedule(job.id, this.deps.options.maxDurationMs);
    } catch (err) {
      throw new StoreUnavailableError(
        `job check could not be scheduled: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    await this.deps.store.create(job);
    this.deps.jobKeys?.remember(job);
    this.deps.metrics?.jobs.inc({ operation: job.operation, state: 'submitting' });
    return job;
  }

  webhookFor(job: JobRecord): WebhookTarget | undefined {
    const base = this.deps.options.publicUrl;
    return base ? { url: `${base}/webhooks/media/${job.id}`, secret: job.secret } : undefined;
  }

  /** The job now lives in its thread: `message` is the live one there, `reply` the channel line. */
  async moveToThread(jobId: string, message: MessageRef, reply: MessageRef): Promise<JobRecord | undefined> {
    const r = await this.deps.store.apply(jobId, { thread: { message, reply }, at: this.now() });
    return r?.job;
  }

  /** Records the message id of the job's public reply. */
  async attachMessage(jobId: string, messageId: string, followUp = false): Promise<JobRecord | undefined> {
    const r = await this.deps.store.apply(jobId, {
      messageId,
      ...(followUp ? { followUp: true as const } : {}),
      at: this.now(),
    });
    return r?.job;
  }

  /**
   * Ends a job that never reached the service and has no message to edit (its reply
   * failed): failed, nothing shown; the after-final work gives the reservation back.
   */
  async abandon(jobId: string, error: JobError): Promise<void> {
    const r = await this.deps.store.apply(jobId, { state: 'failed', error, at: this.now() });
    if (!r?.changed) return;
    await this.mark(jobId, { messageGone: true });
    await this.deps.afterFinal.enqueue(jobId);
  }

  /**
   * Calls the service exactly once and records the outcome. Never throws for a
   * service failure: a refusal fails the job; an answer that was lost leaves it
   * `unconfirmed` (the service may have it: never sent again, confirmed by its
   * webhook, failed only at the job's maximum duration).
   */
  async submit(job: JobRecord, call: SubmitCall): Promise<JobRecord | undefined> {
    const log = this.deps.logger.child({ jobId: job.id, operation: job.operation });
    let outcome: Submitted | TaskResult;
    try {
      outcome = await call(this.webhookFor(job), {
        waiting: (until) => {
          void this.update(job.id, { waitingUntil: until, at: this.now() }).catch(() => undefined);
        },
      });
    } catch (err) {
      if (err instanceof MediaOutcomeUnknownError) {
        log.warn({ err }, 'submission not confirmed: the service may have it; waiting for it to report');
        return this.untilStored(log, () =>
          this.update(job.id, { state: 'unconfirmed', at: this.now() }, 'submit'),
        );
      }
      if (err instanceof MediaOutOfCreditsError) this.deps.outOfCredits?.();
      log.warn({ err }, 'submission failed');
      const failed = { state: 'failed', error: jobErrorFromMedia(err), at: this.now() } as const;
      return this.untilStored(log, () => this.update(job.id, failed, 'submit'));
    }
    this.deps.submissionTaken?.();
    if ('raw' in outcome) {
      // Synchronous operation (upscale): the response is the result.
      const result = outcome;
      return this.untilStored(log, () => this.applyResult(job.id, result, 'submit'));
    }
    log.info({ taskId: outcome.taskId, userId: job.userId }, `job submitted: ${job.operation}`);
    const queued = { state: 'queued', taskId: outcome.taskId, at: this.now() } as const;
    const updated = await this.untilStored(log, () => this.update(job.id, queued, 'submit'));
    if (updated) this.deps.jobKeys?.remember(updated);
    if (updated && !isFinal(updated.state)) {
      await this.deps.checks
        .schedule(
          job.id,
          this.pollingOnly ? this.deps.options.pollInitialMs : this.deps.options.webhookSilenceMs,
        )
        .catch((err: unknown) =>
          log.warn({ err }, 'could not schedule the first poll; the keeper polls later'),
        );
    }
    return updated;
  }

  /**
   * The service has taken (and charged for) the call: its answer must not be lost to a
   * store blip, or the job would sit in `submitting` with its task id forgotten. Retries
   * the write with backoff until the store answers; gives up (undefined) only when the
   * lifecycle is stopped, and then the job's keeper handles it.
   */
  private async untilStored(
    log: Logger,
    write: () => Promise<JobRecord | undefined>,
  ): Promise<JobRecord | undefined> {
    let delay = Math.min(this.deps.options.pollInitialMs, 1000);
    for (;;) {
      try {
        return await write();
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) throw err;
        if (this.stopped) return undefined;
        log.warn({ err, retryInMs: delay }, 'store unavailable after the service call; retrying the write');
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
        if (this.stopped) return undefined;
        delay = Math.min(delay * 2, this.deps.options.pollMaxMs);
      }
    }
  }

  /** Merges a service result (webhook, poll, Refresh or synchronous answer) into the job. */
  async applyResult(jobId: string, result: TaskResult, source: JobSource): Promise<JobRecord | undefined> {
    const update: JobUpdate = { state: result.state, at: this.now() };
    if (result.taskId !== undefined) update.taskId = result.taskId;
    if (result.percentage !== undefined) update.percentage = result.percentage;
    if (result.message !== undefined) update.statusText = result.message;
    if (result.state === 'finished' && result.outputs) update.result = result.outputs;
    if (result.state === 'failed') update.error = jobErrorFromResult(result);
    // A re-delivery that changes nothing (most of a webhook storm) is decided in memory,
    // without the store's async round (lock, merge, write): nothing to show either.
    const known = this.deps.store.applyInMemory?.(jobId, update);
    if (known && !known.changed) return known.job;
    return this.update(jobId, update, source);
  }

  /** Applies an update; when it changed the job, its message follows and a final queues the after-final work. */
  async update(jobId: string, update: JobUpdate, source: JobSource = 'bot'): Promise<JobRecord | undefined> {
    // A poll's result is not followed by re-deliveries: nothing to remember it for.
    const r = await this.deps.store.apply(jobId, update, source === 'poll' ? { remember: false } : undefined);
    if (!r) return undefined;
    const { job, changed } = r;
    if (!changed) return job;
    if (update.state !== undefined && update.state === job.state) {
      this.deps.metrics?.jobs.inc({ operation: job.operation, state: job.state });
      this.logMilestone(job, source);
    }
    if (this.deps.logger.isLevelEnabled('debug')) {
      this.deps.logger.debug(
        {
          jobId,
          taskId: job.taskId,
          operation: job.operation,
          state: job.state,
          pct: job.percentage,
          source,
        },
        'job updated',
      );
    }
    this.deps.messages.jobChanged(job);
    if (isFinal(job.state)) {
      await this.deps.afterFinal
        .enqueue(job.id)
        .catch((err: unknown) =>
          this.deps.logger.warn({ err, jobId }, 'after-final work not queued yet; the job keeper queues it'),
        );
    } else if (r.before === 'unconfirmed' || r.before === 'submitting') {
      // A sign of the service for a job whose submission answer was lost (or not back yet):
      // from now on it is polled like any other (a late submit answer schedules it too).
      await this.deps.checks
        .schedule(
          jobId,
          this.pollingOnly ? this.deps.options.pollInitialMs : this.deps.options.webhookSilenceMs,
        )
        .catch(() => undefined);
    }
    return job;
  }

  /**
   * AutoMod refused text made from the member's input: from now on the job's public
   * renders leave it out, and its message follows (unless `show` is false: the caller
   * sends the message itself). Resolves the job only for the call that set it (so the
   * member is told once).
   */
  async withholdText(jobId: string, show = true): Promise<JobRecord | undefined> {
    const r = await this.deps.store.apply(jobId, { textWithheld: true, at: this.now() });
    if (!r?.changed) return undefined;
    if (show) this.deps.messages.jobChanged(r.job);
    return r.job;
  }

  /**
   * Bookkeeping (never shown): the final reached the message, the message is gone, the job
   * is settled, Discord refused the interaction token, the member's DMs are closed.
   */
  async mark(
    jobId: string,
    flags: Pick<JobUpdate, 'finalShown' | 'messageGone' | 'settled' | 'tokenRefused' | 'dmRefused'>,
  ): Promise<void> {
    await this.deps.store.apply(jobId, { ...flags, at: this.now() }, { remember: false });
  }

  /**
   * A personal job still running near its token's end: its message says once that the
   * result will come by DM (stored first, so the render shows it and no instance repeats it).
   */
  async noticeDm(jobId: string): Promise<void> {
    const r = await this.deps.store.apply(jobId, { dmNotice: true, at: this.now() }, { remember: false });
    if (r && r.job.dmNoticeAt !== undefined && !isFinal(r.job.state)) this.deps.messages.jobChanged(r.job);
  }

  /** One info line per final state (finished, failed), with the operation and how long it took. */
  private logMilestone(job: JobRecord, source: string): void {
    const base = { jobId: job.id, taskId: job.taskId, operation: job.operation, userId: job.userId, source };
    const seconds = (from: number | undefined) =>
      from === undefined ? undefined : Math.round((this.now() - from) / 100) / 10;
    if (job.state === 'finished') {
      const durationSeconds = seconds(job.submittedAt ?? job.createdAt);
      this.deps.logger.info(
        { ...base, durationSeconds },
        `job finished: ${job.operation} in ${durationSeconds} s`,
      );
    } else if (job.state === 'failed') {
      const durationSeconds = seconds(job.createdAt);
      this.deps.logger.info(
        { ...base, durationSeconds, error: job.error?.code },
        `job failed: ${job.operation} after ${durationSeconds} s (${job.error?.code ?? 'unknown'})`,
      );
    } else if (job.state === 'unconfirmed') {
      this.deps.logger.info(base, `job not confirmed: ${job.operation} (waiting for the service to report)`);
    }
  }

  stop(): void {
    this.stopped = true;
  }
}
