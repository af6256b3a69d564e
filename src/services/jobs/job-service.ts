import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Submitted } from '../media/client.js';
import { MediaAuthError, MediaRequestRejectedError } from '../media/errors.js';
import type { Operation, TaskResult, WebhookTarget } from '../media/types.js';
import { StoreUnavailableError } from '../store/errors.js';
import type { JobError, JobMessageRef, JobRecord, JobStore, JobUpdate } from '../store/types.js';
import type { MessagePayload } from '../discord/render.js';
import type { Metrics } from '../../metrics.js';
import { jobError, jobErrorFromMedia, jobErrorFromResult } from './job-errors.js';

export interface EditSink {
  push(req: {
    jobId: string;
    ref: JobMessageRef;
    messageCreatedAt: number;
    payload: MessagePayload | (() => MessagePayload);
    final: boolean;
  }): void;
  /** Drops the job's slot when nothing of it waits or is in flight (another instance takes it); false otherwise. */
  handOver?(jobId: string): boolean;
}

export interface TaskFetcher {
  fetchTask(operation: Operation, taskId: string): Promise<TaskResult>;
}

export interface JobServiceOptions {
  /** Set: webhooks requested at `{publicUrl}/webhooks/media/{jobId}`. Unset: polling only. */
  publicUrl?: string;
  maxDurationMs: number;
  pollInitialMs: number;
  pollMaxMs: number;
  webhookSilenceMs: number;
  /** Consecutive "task not found" answers before a polled job is failed. */
  notFoundLimit?: number;
}

/** Where the webhook route looks up job secrets without a store read. */
export interface JobKeyMemo {
  remember(job: Pick<JobRecord, 'id' | 'secret' | 'operation' | 'taskId'>): void;
}

/**
 * Several instances on one Redis: which instance works on a job (polls it, edits its
 * message). Absent: this process owns every job (SQLite, one process).
 */
export interface JobOwner {
  owns(jobId: string): boolean;
  /** Takes the job if nobody owns it; resolves the owner's id. */
  claim(jobId: string): Promise<string>;
  /** Tells the owner the job changed (taking it when it has none); true when this instance owns it now. */
  route(jobId: string, source: string): Promise<boolean>;
  /** Work here is over; `done`: nobody needs to pick the job up again. */
  release(jobId: string, done: boolean): Promise<void>;
  /** Gives the job to a less busy instance if that evens the load (`release` false: keep it). */
  handOff?(jobId: string, release: () => boolean): Promise<boolean>;
  readonly instanceId: string;
}

export interface JobServiceDeps {
  ownership?: JobOwner;
  store: JobStore;
  jobKeys?: JobKeyMemo;
  media: TaskFetcher;
  edits: EditSink;
  render: (job: JobRecord, now: number) => MessagePayload;
  /** The short channel line of a job that lives in a thread (JobRecord.reply). */
  renderReply?: (job: JobRecord) => MessagePayload;
  logger: Logger;
  metrics?: Metrics;
  options: JobServiceOptions;
  now?: () => number;
  /**
   * A job reached finished/failed: run by the job's owner when it shows the final (and
   * again by an instance taking the job over, or when the final is shown again), so it
   * must be idempotent. The job leaves the open set only once it settled. Errors are
   * logged, never thrown into the job's path.
   */
  onFinal?: (job: JobRecord) => Promise<void>;
  /**
   * Several instances: whether the job's message already shows its final state (its
   * owner died between Discord's answer and recording it). An adopted final job whose
   * message already shows it is not edited again, so a final is delivered once.
   */
  finalShown?: (job: JobRecord) => Promise<boolean>;
}

export interface NewJob {
  /** Chosen by the caller when it reserves a fair-use slot first; default a random UUID. */
  id?: string;
  operation: Operation;
  userId: string;
  message: JobMessageRef;
  params: JobRecord['params'];
  cost?: number;
}

type SubmitCall = (webhook: WebhookTarget | undefined) => Promise<Submitted | TaskResult>;

/**
 * The life of a job: stored before the service call, submitted once, then moved
 * forward by webhooks and polls through the store's monotonic merge; every change
 * is rendered and handed to the edit queue. Webhooks and polls may race: the merge
 * makes that harmless.
 */
export class JobService {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly pollAttempts = new Map<string, number>();
  private readonly notFound = new Map<string, number>();
  private readonly lastWebhookAt = new Map<string, number>();
  /** Owned jobs whose message is gone (released once final). */
  private readonly gone = new Set<string>();
  /** After-final work running here (onFinal), by job id. */
  private readonly afterFinal = new Map<string, Promise<void>>();
  /** Jobs this instance already offered to a less busy one (once each). */
  private readonly offered = new Set<string>();
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly deps: JobServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  get pollingOnly(): boolean {
    return this.deps.options.publicUrl === undefined;
  }

  /** Stores a new job in `submitting` state. Throws StoreUnavailableError when the store is down. */
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
      state: 'submitting',
      percentage: 0,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    await this.deps.store.create(job);
    if (this.deps.ownership) {
      // The creator owns the job from the start: it submits it, polls it and edits its message.
      try {
        await this.deps.ownership.claim(job.id);
      } catch (err) {
        throw new StoreUnavailableError(
          `job lease failed: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
    }
    this.deps.jobKeys?.remember(job);
    this.deps.metrics?.jobs.inc({ operation: job.operation, state: 'submitting' });
    return job;
  }

  webhookFor(job: JobRecord): WebhookTarget | undefined {
    const base = this.deps.options.publicUrl;
    return base ? { url: `${base}/webhooks/media/${job.id}`, secret: job.secret } : undefined;
  }

  /** The job now lives in its thread: `message` is the live one there, `reply` the channel line. */
  async moveToThread(
    jobId: string,
    message: JobMessageRef,
    reply: JobMessageRef,
  ): Promise<JobRecord | undefined> {
    const r = await this.deps.store.apply(jobId, { thread: { message, reply }, at: this.now() });
    return r?.job;
  }

  /**
   * Ends a job that never reached the service and has no message to edit (its reply
   * failed): stored as failed, nothing rendered, no after-final work.
   */
  async abandon(jobId: string, error: JobError): Promise<void> {
    await this.deps.store.apply(jobId, { state: 'failed', error, at: this.now() });
  }

  /** Records the message id of the job's public reply. */
  async attachMessage(jobId: string, messageId: string): Promise<JobRecord | undefined> {
    const r = await this.deps.store.apply(jobId, { messageId, at: this.now() });
    return r?.job;
  }

  /**
   * Calls the service exactly once and records the outcome. Never throws for a
   * service failure: that becomes the job's failed state (and message).
   */
  async submit(job: JobRecord, call: SubmitCall): Promise<JobRecord | undefined> {
    const log = this.deps.logger.child({ jobId: job.id, operation: job.operation });
    let outcome: Submitted | TaskResult;
    try {
      outcome = await call(this.webhookFor(job));
    } catch (err) {
      log.warn({ err }, 'submission failed');
      const failed = { state: 'failed', error: jobErrorFromMedia(err), at: this.now() } as const;
      return this.untilStored(log, () => this.update(job.id, failed));
    }
    if ('raw' in outcome) {
      // Synchronous operation (upscale): the response is the result.
      const result = outcome;
      return this.untilStored(log, () => this.applyResult(job.id, result, 'submit'));
    }
    log.info({ taskId: outcome.taskId, userId: job.userId }, `job submitted: ${job.operation}`);
    const queued = { state: 'queued', taskId: outcome.taskId, at: this.now() } as const;
    const updated = await this.untilStored(log, () => this.update(job.id, queued));
    if (updated) this.deps.jobKeys?.remember(updated);
    if (updated && !isFinal(updated)) {
      this.schedulePoll(
        updated,
        this.pollingOnly ? this.deps.options.pollInitialMs : this.deps.options.webhookSilenceMs,
      );
    }
    return updated;
  }

  /**
   * The service has taken (and charged for) the call: its answer must not be lost to a
   * store blip, or the job would sit in `submitting` with its task id forgotten. Retries
   * the write with backoff until the store answers; gives up (undefined) only when the
   * service is stopped, and then the restart recovery handles the job.
   */
  private async untilStored(
    log: Logger,
    write: () => Promise<JobRecord | undefined>,
  ): Promise<JobRecord | undefined> {
    let delay = this.deps.options.pollInitialMs;
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

  /** Merges a service result (webhook, poll or synchronous answer) into the job. */
  async applyResult(
    jobId: string,
    result: TaskResult,
    source: 'webhook' | 'poll' | 'submit',
  ): Promise<JobRecord | undefined> {
    const update: JobUpdate = { state: result.state, at: this.now() };
    if (result.taskId !== undefined) update.taskId = result.taskId;
    if (result.percentage !== undefined) update.percentage = result.percentage;
    if (result.message !== undefined) update.statusText = result.message;
    if (result.state === 'finished' && result.outputs) update.result = result.outputs;
    if (result.state === 'failed') update.error = jobErrorFromResult(result);
    // A re-delivery that changes nothing (most of a webhook storm) is decided in memory,
    // without the store's async round (lock, merge, write): nothing to show either.
    const known = this.deps.store.applyInMemory?.(jobId, update);
    if (known && !known.changed) {
      this.heardFrom(known.job, source);
      return known.job;
    }
    const job = await this.update(jobId, update, source);
    if (job) this.heardFrom(job, source);
    return job;
  }

  /** A webhook arrived: poll only if the webhook goes silent again. */
  private heardFrom(job: JobRecord, source: string): void {
    if (isFinal(job) || source !== 'webhook' || this.pollingOnly) return;
    this.lastWebhookAt.set(job.id, this.now());
    // The pending timer is kept and re-armed when it fires (no timer churn per webhook).
    if (!this.timers.has(job.id)) this.schedulePoll(job, this.deps.options.webhookSilenceMs);
  }

  /** Applies an update; when it changed the job, renders it and queues the edit. */
  async update(jobId: string, update: JobUpdate, source = 'bot'): Promise<JobRecord | undefined> {
    // A poll's result is not followed by re-deliveries: nothing to remember it for.
    const r = await this.deps.store.apply(jobId, update, source === 'poll' ? { remember: false } : undefined);
    if (!r) return undefined;
    const { job, changed } = r;
    if (changed) {
      if (update.state !== undefined && update.state === job.state) {
        this.deps.metrics?.jobs.inc({ operation: job.operation, state: job.state });
        this.logMilestone(job, source);
      }
      // Guarded: under a webhook storm the log object alone costs more than the check.
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
      // The owner shows the job, and a final's after-final work runs there (show()).
      this.publish(job, source);
      if (isFinal(job)) this.cancelPoll(jobId);
    }
    return job;
  }

  /**
   * One info line per final state (finished, failed), with the operation and how long
   * it took; `submit` logs the acceptance, progress stays at debug.
   */
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
    }
  }

  /**
   * A change this instance applied: shown here when this instance owns the job,
   * else handed to the owner (which renders the stored record), or taken over
   * when the job has no owner.
   */
  private publish(job: JobRecord, source: string): void {
    const own = this.deps.ownership;
    if (!own || own.owns(job.id)) {
      this.show(job);
      return;
    }
    own.route(job.id, source).then(
      (mine) => {
        if (mine) this.resume(job, source);
      },
      (err: unknown) =>
        this.deps.logger.warn({ err, jobId: job.id }, 'could not hand a job change to its owner'),
    );
  }

  /**
   * This instance now owns a job that was live elsewhere: show it and keep polling it.
   * A handover ('handoff') comes with the message already showing the stored state.
   */
  private resume(job: JobRecord, source: string): void {
    const handedOver = source === 'handoff' || source === 'handoff-changed';
    if (handedOver) {
      this.offered.add(job.id); // not passed on again
      this.deps.logger.debug({ jobId: job.id }, 'job received from a busier instance');
    }
    if (source !== 'handoff' || isFinal(job)) this.show(job);
    if (isFinal(job) || this.timers.has(job.id)) return;
    if (source === 'webhook') this.lastWebhookAt.set(job.id, this.now());
    this.schedulePoll(
      job,
      this.pollingOnly || (source !== 'webhook' && !handedOver)
        ? this.deps.options.pollInitialMs
        : this.deps.options.webhookSilenceMs,
    );
  }

  /**
   * One of the job's edits reached Discord. A final ends this instance's work on it;
   * the first progress edit of a job is the moment to give it to a less busy
   * instance (its message shows what this one knew, nothing of it is queued here).
   */
  delivered(jobId: string, final: boolean): void {
    if (final) {
      this.messageDone(jobId);
      return;
    }
    const own = this.deps.ownership;
    if (!own?.handOff || this.offered.has(jobId) || !own.owns(jobId)) return;
    this.offered.add(jobId);
    const release = () => this.deps.edits.handOver?.(jobId) ?? false;
    own.handOff(jobId, release).then(
      (moved) => {
        if (!moved) return;
        this.forget(jobId);
        this.deps.logger.debug({ jobId }, 'job handed to a less busy instance');
      },
      (err: unknown) => {
        // The lease lapses and the sweep gives the job to someone (this instance, maybe).
        this.forget(jobId);
        this.deps.logger.warn({ err, jobId }, 'job handover failed; the sweep picks the job up');
      },
    );
  }

  /** Another instance changed a job this instance owns: render the stored record. */
  async changed(jobId: string, source: string): Promise<void> {
    const job = await this.deps.store.get(jobId);
    if (!job) {
      await this.deps.ownership?.release(jobId, true);
      return;
    }
    this.resume(job, source);
  }

  /**
   * Takes over a job whose owner is gone (it died at any point): a job still being
   * submitted is failed (never resubmitted), an unfinished one is shown and polled,
   * a final one whose final edit may not have been delivered is shown.
   */
  async adopt(jobId: string): Promise<void> {
    const job = await this.deps.store.get(jobId);
    if (!job) {
      await this.deps.ownership?.release(jobId, true);
      return;
    }
    if (isFinal(job) && this.deps.finalShown) {
      const shown = await this.deps.finalShown(job).catch(() => false);
      if (shown) {
        this.deps.logger.info({ jobId, state: job.state }, 'adopted job already shows its final state');
        this.runAfterFinal(job); // the dead owner may not have finished it
        this.messageDone(jobId);
        return;
      }
    }
    this.deps.logger.info({ jobId, state: job.state }, 'resuming a job left by another instance');
    await this.resumeUnfinished(job, this.deps.options.pollInitialMs);
  }

  /** The job's message got its final state: nobody needs to edit it again. */
  messageDone(jobId: string): void {
    const own = this.deps.ownership;
    if (!own || !own.owns(jobId)) return;
    this.gone.delete(jobId);
    this.offered.delete(jobId);
    // The job stays open (another instance would finish it) until its after-final work is done too.
    const release = () =>
      own
        .release(jobId, true)
        .catch((err: unknown) => this.deps.logger.warn({ err, jobId }, 'could not release a finished job'));
    const pending = this.afterFinal.get(jobId);
    if (pending) void pending.then(release);
    else void release();
  }

  /**
   * A final job's after-final work (free the member's slot, the gallery post), run by
   * the job's owner whenever it shows the final: right after the transition, and again
   * by an instance that takes the job over, so an owner dying half-way loses nothing
   * (onFinal is idempotent). Once at a time per job here.
   */
  private runAfterFinal(job: JobRecord): void {
    const onFinal = this.deps.onFinal;
    if (!onFinal || this.afterFinal.has(job.id)) return;
    const work = onFinal(job)
      .catch((err: unknown) => this.deps.logger.warn({ err, jobId: job.id }, 'after-final work failed'))
      .finally(() => this.afterFinal.delete(job.id));
    this.afterFinal.set(job.id, work);
  }

  /** The job's message is gone: no more edits; the job is released once final (polls go on meanwhile). */
  messageGone(jobId: string): void {
    if (!this.deps.ownership?.owns(jobId)) return;
    this.gone.add(jobId);
    this.deps.store.get(jobId).then(
      (job) => {
        if (!job || isFinal(job)) this.messageDone(jobId);
      },
      () => undefined, // released when the job turns final (show) or by the next owner
    );
  }

  /** Queues the job's current state for its Discord message. */
  show(job: JobRecord): void {
    if (isFinal(job)) this.runAfterFinal(job);
    if (this.deps.ownership && isFinal(job) && (this.gone.has(job.id) || !this.hasMessage(job))) {
      // Nothing to edit: the job's work is over.
      this.messageDone(job.id);
    }
    if (!this.hasMessage(job)) return;
    this.deps.edits.push({
      jobId: job.id,
      ref: job.message,
      messageCreatedAt: job.createdAt,
      // Rendered lazily: under a storm most intermediate states are coalesced away unsent.
      payload: () => this.deps.render(job, this.now()),
      final: isFinal(job),
    });
    // A job in its own thread: the channel's one-line reply ends on the final state.
    if (job.reply && isFinal(job) && this.deps.renderReply) {
      const renderReply = this.deps.renderReply;
      this.deps.edits.push({
        jobId: `${job.id}:reply`,
        ref: job.reply,
        messageCreatedAt: job.createdAt,
        payload: () => renderReply(job),
        final: true,
      });
    }
  }

  /**
   * Restart recovery: every unfinished job is re-rendered and polled again; a job
   * whose submission was in flight when the process died is failed, never resubmitted.
   */
  async recover(): Promise<{ resumed: number; failed: number }> {
    let resumed = 0;
    let failed = 0;
    let i = 0;
    // A page of records at a time: only those are alive at once, however many jobs there are.
    for await (const page of this.deps.store.unfinishedPages()) {
      for (const job of page) {
        const outcome = await this.recoverOne(job, i++);
        if (outcome === 'failed') failed++;
        else if (outcome === 'resumed') resumed++;
      }
    }
    this.deps.logger.info({ resumed, failed }, 'recovered unfinished jobs');
    return { resumed, failed };
  }

  /** The `i`th unfinished job found at start: claimed (several instances), then resumed. */
  private async recoverOne(job: JobRecord, i: number): Promise<'resumed' | 'failed' | 'final' | 'skipped'> {
    // Several instances: a job another live instance owns is its business.
    const own = this.deps.ownership;
    if (own && !own.owns(job.id)) {
      try {
        if ((await own.claim(job.id)) !== own.instanceId) return 'skipped';
      } catch (err) {
        this.deps.logger.warn({ err, jobId: job.id }, 'could not claim an unfinished job; the sweep retries');
        return 'skipped';
      }
    }
    // Spread the first polls so a restart with many jobs does not burst the service:
    // 20 a second, in whole seconds so that thousands of timers share a few hundred
    // durations (Node keeps one timer list per duration).
    return this.resumeUnfinished(
      job,
      Math.min(this.deps.options.pollInitialMs, 1000) + Math.floor(i / 20) * 1000,
    );
  }

  /** Shows a job this instance (now) owns and polls it again; a job caught mid-submission is failed. */
  private async resumeUnfinished(
    job: JobRecord,
    firstPollMs: number,
  ): Promise<'resumed' | 'failed' | 'final'> {
    if (isFinal(job)) {
      this.show(job);
      return 'final';
    }
    if (!job.taskId) {
      const log = this.deps.logger.child({ jobId: job.id, operation: job.operation });
      log.warn('job was being submitted when the bot stopped; marking it failed');
      await this.update(job.id, {
        state: 'failed',
        error: jobError(
          'restart_during_submit',
          'The bot restarted while submitting this job, so it is not known whether the service received it. Check /tasks before retrying.',
        ),
        at: this.now(),
      });
      return 'failed';
    }
    this.deps.jobKeys?.remember(job);
    this.show(job);
    this.schedulePoll(job, firstPollMs);
    return 'resumed';
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  pendingPolls(): number {
    return this.timers.size;
  }

  // ------------------------------------------------------------ polling

  private schedulePoll(job: JobRecord, delayMs: number): void {
    if (this.stopped || !job.taskId || isFinal(job)) return;
    // Only the job's owner polls it.
    if (this.deps.ownership && !this.deps.ownership.owns(job.id)) return;
    // The timer keeps only the id: a record held by each of thousands of pending timers adds up.
    const jobId = job.id;
    this.cancelPoll(jobId);
    const timer = setTimeout(
      () => {
        this.timers.delete(jobId);
        void this.poll(jobId).catch((err: unknown) =>
          this.deps.logger.error({ err, jobId }, 'poll crashed; will retry'),
        );
      },
      Math.max(0, delayMs),
    );
    timer.unref();
    this.timers.set(jobId, timer);
  }

  private cancelPoll(jobId: string): void {
    const t = this.timers.get(jobId);
    if (t) clearTimeout(t);
    this.timers.delete(jobId);
  }

  private nextDelay(jobId: string): number {
    const n = (this.pollAttempts.get(jobId) ?? 0) + 1;
    this.pollAttempts.set(jobId, n);
    const base = Math.min(
      this.deps.options.pollMaxMs,
      this.deps.options.pollInitialMs * 2 ** Math.min(n, 16),
    );
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  /** Another instance owns the job now: stop tracking it here (true), or false when it is still ours. */
  private forgetIfMoved(jobId: string): boolean {
    if (!this.deps.ownership || this.deps.ownership.owns(jobId)) return false;
    this.forget(jobId);
    return true;
  }

  private async poll(jobId: string): Promise<void> {
    if (this.stopped) return;
    // The lease was lost (a pause past it): the new owner polls.
    if (this.forgetIfMoved(jobId)) return;
    let job: JobRecord | undefined;
    try {
      job = await this.deps.store.get(jobId);
    } catch (err) {
      this.deps.logger.warn({ err, jobId }, 'store unavailable while polling; will retry');
      const t = setTimeout(
        () => void this.poll(jobId).catch(() => undefined),
        this.deps.options.pollInitialMs,
      );
      t.unref();
      this.timers.set(jobId, t);
      return;
    }
    if (!job || isFinal(job) || !job.taskId) {
      this.forget(jobId);
      return;
    }
    // Built only when something is logged: a child logger per poll of thousands of jobs is garbage.
    const { taskId, operation } = job;
    const log = () => this.deps.logger.child({ jobId, taskId, operation });
    if (this.now() - job.createdAt > this.deps.options.maxDurationMs) {
      log().warn('job exceeded its maximum duration');
      await this.update(jobId, {
        state: 'failed',
        error: jobError(
          'timed_out',
          `No result after ${Math.round(this.deps.options.maxDurationMs / 60_000)} minutes. The service may still finish it: check /tasks id:${job.taskId}.`,
        ),
        at: this.now(),
      });
      this.forget(jobId);
      return;
    }
    // Checked after the duration: a task that keeps webhooking progress must still time out.
    const heardAt = this.lastWebhookAt.get(jobId);
    const silentFor = heardAt === undefined ? Infinity : this.now() - heardAt;
    if (silentFor < this.deps.options.webhookSilenceMs) {
      this.schedulePoll(job, this.deps.options.webhookSilenceMs - silentFor);
      return;
    }
    // The store read above awaited: a handover may have moved the job meanwhile, and its new
    // owner polls it now. Checked again with no await before the fetch, so two instances
    // never poll one job at once.
    if (this.forgetIfMoved(jobId)) return;
    try {
      if (this.deps.logger.isLevelEnabled('debug')) this.deps.logger.debug({ jobId }, 'job polled');
      const result = await this.deps.media.fetchTask(job.operation, job.taskId);
      this.deps.metrics?.polls.inc({ outcome: result.state });
      this.notFound.delete(jobId);
      const updated = await this.applyResult(jobId, result, 'poll');
      if (updated && !isFinal(updated)) this.schedulePoll(updated, this.nextDelay(jobId));
      else this.forget(jobId);
    } catch (err) {
      this.deps.metrics?.polls.inc({ outcome: 'error' });
      if (err instanceof MediaAuthError) {
        log().error('the media service rejected the API key while polling; failing the job');
        await this.update(jobId, { state: 'failed', error: jobErrorFromMedia(err), at: this.now() });
        this.forget(jobId);
        return;
      }
      if (err instanceof MediaRequestRejectedError) {
        const n = (this.notFound.get(jobId) ?? 0) + 1;
        this.notFound.set(jobId, n);
        if (n >= (this.deps.options.notFoundLimit ?? 3)) {
          log().warn({ msgs: err.messages }, 'the service keeps rejecting the fetch; failing the job');
          await this.update(jobId, { state: 'failed', error: jobErrorFromMedia(err), at: this.now() });
          this.forget(jobId);
          return;
        }
      }
      log().warn({ err }, 'poll failed; backing off');
      this.schedulePoll(job, this.nextDelay(jobId));
    }
  }

  private hasMessage(job: JobRecord): boolean {
    return job.message.messageId !== undefined || job.message.interaction !== undefined;
  }

  private forget(jobId: string): void {
    this.offered.delete(jobId);
    this.cancelPoll(jobId);
    this.pollAttempts.delete(jobId);
    this.notFound.delete(jobId);
    this.lastWebhookAt.delete(jobId);
  }
}

export function isFinal(job: Pick<JobRecord, 'state'>): boolean {
  return job.state === 'finished' || job.state === 'failed';
}
