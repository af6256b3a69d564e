import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.js';
import type { ChannelBudget } from '../discord/edits/channel-budget.js';
import { encodeEditKey, type JobEditTarget } from '../discord/edits/edit-key.js';
import type { DiscordTransport } from '../discord/discord-transport.js';
import {
  DEFAULT_EDIT_POLICY,
  backoffMs,
  budgetKind,
  classify,
  decide,
  editOutcome,
  editable,
  interactionReadyAt,
  routeFor,
  type Failure,
  type EditPolicyOptions,
  type Route,
} from '../discord/edits/edit-policy.js';
import {
  dmNoticeDue,
  editsOver,
  hasMessage,
  messageFacts,
  type JobRenderers,
} from '../discord/edits/job-messages.js';
import type { MessagePayload } from '../discord/render/limits.js';
import { isFinal } from '../store/merge.js';
import type { JobLifecycle } from '../jobs/lifecycle.js';
import type { MessageUpdates } from '../jobs/ports.js';
import type { JobRecord, JobStore } from '../store/types.js';
import { delayJob, queueWithWorker, stillOurs, type BullContext, type QueueHandle } from './bull.js';
import { ProgressCoalescer } from './progress-coalescer.js';
import type { PostedMessage } from '../shared/message-ref.js';

/**
 * The Discord edits of job messages on BullMQ: the Redis driver of the edit policy
 * (../discord/edits/edit-policy.ts decides routes and outcomes; this only schedules).
 * A change merged on any instance adds an edit job for the message (deduplicated per
 * message with `keepLastIfActive`: never two edits of one message at once, at most
 * one waiting); whichever worker runs it renders the *stored* record, so the latest
 * state wins. Finals go first (priority) and are retried until they land or the
 * message is gone; a 429 delays the edit by Discord's `retry_after`.
 *
 * What is learned about a message (its token refused, the message gone, the
 * member's DMs closed) is stored with the job before anything else is sent, so the
 * next edit, on any instance, knows it.
 *
 * Redis round trips of a final (measured in test/edit-drivers.test.ts): one `add`;
 * when it folded into a waiting progress edit, its priority and promotion go
 * together in one more; then the worker's fetch, the record and the message's
 * interaction answer times read beside the lock check, and the PATCH.
 */

interface EditData {
  jobId: string;
  target: JobEditTarget;
  /** Interaction route 429: not sent before this (a promotion of the edit must not cut it short). */
  notBefore?: number;
  /**
   * AutoMod refused this edit even without the member's text: it goes without any free text,
   * also after a delay or a retry (else each run would send the refused body once more).
   */
  bare?: true;
}

/** Every edit job's BullMQ attempts (capped backoff: well over a day), then the keeper asks again. */
const EDIT_ATTEMPTS = 2000;
/** Progress changes of one message queued at most once per this window (plus one at its end). */
const PROGRESS_COALESCE_MS = 250;
const FINAL_PRIORITY = 1;
/** Workers of the edit queue (sharing its concurrency) in each instance. */
const EDIT_WORKERS = 4;
const PROGRESS_PRIORITY = 10;
/** A final queued by this instance is not queued again within this (the keeper re-shows later ones). */
const FINAL_REQUEUE_MS = 5000;
/** How long the answer times of a message's interaction edits are kept (its window). */
const MARK_TTL_MS = 10_000;

const dedupKey = (d: Pick<EditData, 'jobId' | 'target'>): string =>
  encodeEditKey({ kind: 'job', jobId: d.jobId, target: d.target });

export interface JobEditsDeps {
  store: Pick<JobStore, 'get'>;
  lifecycle: Pick<JobLifecycle, 'mark'>;
  transport: DiscordTransport;
  budget: ChannelBudget;
  renderers: JobRenderers;
  /** SET/GET of the interaction edits' answer times per message (the queue's connection). */
  marks: {
    get(key: string): Promise<string | null | undefined>;
    set(key: string, value: string, options: { expiration: { type: 'PX'; value: number } }): Promise<unknown>;
  };
  logger: Logger;
  metrics?: Metrics;
  now?: () => number;
  concurrency?: number;
  options?: Partial<EditPolicyOptions>;
  /** AutoMod refused the job's text: mark it withheld (its message is then queued again). */
  onAutoMod?: (jobId: string) => Promise<void>;
  /** A personal job's "result by DM" notice is due: the caller stores it and shows the message again. */
  onDmNoticeDue?: (jobId: string) => Promise<void>;
  /** The edit reached Discord (latency metric, tests). */
  onDelivered?: (jobId: string, final: boolean) => void;
  /** A personal job's final went by DM: where it is (the caller indexes it for /privacy delete). */
  onDirectMessage?: (jobId: string, posted: PostedMessage) => Promise<void>;
}

export class BullJobEdits implements MessageUpdates {
  private readonly handle: QueueHandle<EditData>;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly opts: EditPolicyOptions;
  /** Finals this instance queued in the last FINAL_REQUEUE_MS (chronological): job id → when, which version. */
  private readonly finalsQueued = new Map<string, { at: number; version: number }>();
  /** Personal jobs whose notice this instance queued already (a delayed job, deduplicated anyway). */
  private readonly noticed = new Map<string, number>();
  /**
   * Progress edits of a message are spaced anyway: a webhook storm need not queue each change.
   * This instance's worker tells it when the message's next edit is queued or can go.
   */
  private readonly progress: ProgressCoalescer;

  constructor(
    private readonly ctx: BullContext,
    private readonly deps: JobEditsDeps,
  ) {
    this.now = deps.now ?? Date.now;
    this.log = deps.logger;
    this.opts = { ...DEFAULT_EDIT_POLICY, ...deps.options };
    this.progress = new ProgressCoalescer(
      PROGRESS_COALESCE_MS,
      (jobId) => void this.add({ jobId, target: 'message' }, false),
      this.now,
    );
    this.handle = queueWithWorker<EditData>(ctx, 'edits', (job, token) => this.process(job, token), {
      concurrency: deps.concurrency ?? 64,
      // A storm's finals start within a few round trips, not after 64 fetches (see queueWithWorker).
      workers: EDIT_WORKERS,
      settings: {
        // The policy's capped exponential backoff with jitter.
        backoffStrategy: (attempts: number) => Math.round(backoffMs(attempts, Math.random(), this.opts)),
      },
    });
  }

  jobChanged(job: JobRecord): void {
    if (editsOver(job) || !hasMessage(job)) return;
    this.scheduleNotice(job);
    if (!isFinal(job.state)) {
      // A progress no route can take now (a message over an hour old, a personal job past its
      // token) is not queued, as in process: the worker would only drop it, after a BullMQ job
      // added, fetched and finished for nothing (a restart's polls of old jobs did so for each).
      if (!editable(messageFacts(job, 'message'), this.now(), false, this.opts)) return;
      return this.progress.changed(job.id);
    }
    this.progress.flush(job.id);
    this.noticed.delete(job.id);
    // The same final handed over again at once (the webhook, then the keeper's check) is
    // queued already, durably: a second add would only fold into it, two round trips for nothing.
    const t = this.now();
    for (const [id, { at }] of this.finalsQueued) {
      if (t - at < FINAL_REQUEUE_MS) break;
      this.finalsQueued.delete(id);
    }
    // Only the same version: a later change of the final (its text withheld) must be shown.
    if (this.finalsQueued.get(job.id)?.version === job.version) return;
    void this.add({ jobId: job.id, target: 'message' }, true).then((queued) => {
      if (!queued) return;
      this.finalsQueued.delete(job.id);
      this.finalsQueued.set(job.id, { at: t, version: job.version });
    });
    if (job.reply) void this.add({ jobId: job.id, target: 'reply' }, true);
  }

  private scheduleNotice(job: JobRecord): void {
    const due = dmNoticeDue(job, this.opts);
    if (due === undefined || this.noticed.has(job.id) || !this.deps.onDmNoticeDue) return;
    // Forget those past their token's life (chronological): the set stays as big as the running jobs.
    const t = this.now();
    for (const [id, at] of this.noticed) {
      if (t - at < this.opts.interactionFreshMs + 60_000) break;
      this.noticed.delete(id);
    }
    this.noticed.set(job.id, t);
    void this.handle.queue
      .add(
        'edit',
        { jobId: job.id, target: 'notice' },
        {
          deduplication: { id: dedupKey({ jobId: job.id, target: 'notice' }) },
          delay: Math.max(0, due - this.now()),
          attempts: 20,
          backoff: { type: 'custom' },
        },
      )
      .catch((err: unknown) => {
        this.noticed.delete(job.id);
        this.log.warn({ err, jobId: job.id }, 'could not schedule the result-by-DM notice');
      });
  }

  /** Resolves whether the edit is queued (false: Redis unreachable, the keeper asks again). */
  private async add(data: EditData, final: boolean): Promise<boolean> {
    const ourId = `${dedupKey(data)}.${randomBytes(6).toString('hex')}`;
    try {
      const added = await this.handle.queue.add('edit', data, {
        jobId: ourId,
        deduplication: { id: dedupKey(data), keepLastIfActive: true },
        priority: final ? FINAL_PRIORITY : PROGRESS_PRIORITY,
        attempts: EDIT_ATTEMPTS,
        backoff: { type: 'custom' },
      });
      // Folded into an edit already there (a progress one, waiting or delayed for its
      // spacing): the final moves it to the front and out of its delay. Both requests go
      // in one round trip (written in the same tick); either may find nothing to do.
      if (final && added.id !== undefined && added.id !== ourId) {
        await Promise.all([
          added.changePriority({ priority: FINAL_PRIORITY }).catch(() => undefined),
          added.promote().catch(() => undefined),
        ]);
      }
      return true;
    } catch (err) {
      // Redis unreachable: the job's keeper shows the final again at its next check.
      this.log.warn({ err, jobId: data.jobId, final }, 'could not queue a message edit');
      return false;
    }
  }

  /** Edits waiting, delayed or running (all instances); notices waiting for their time are not counted. */
  async depth(): Promise<number> {
    const c = await this.handle.queue.getJobCounts('waiting', 'active', 'prioritized');
    const delayed = await this.handle.queue.getDelayed();
    return (
      Object.values(c).reduce((a, b) => a + b, 0) + delayed.filter((j) => j.data.target !== 'notice').length
    );
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
    const { jobId, target } = job.data;
    // The record and the lock together (one round trip each, sent at once): a worker paused
    // past its lock must not repeat what the job's new worker sends. A lock just extended
    // holds for lockMs: within a quarter of it no second check is needed before sending.
    let fencedAt = Date.now();
    const markKey = `${this.ctx.prefix}:edit-at:${dedupKey(job.data)}`;
    // The message's interaction answer times, read beside them: no round trip of their own.
    const [record, ours, marks] = await Promise.all([
      this.deps.store.get(jobId),
      stillOurs(job, token, this.ctx.lockMs),
      target === 'notice' ? undefined : this.deps.marks.get(markKey),
    ]);
    if (!ours) {
      this.log.warn({ jobId, target }, 'edit job no longer ours (paused past its lock): not sent');
      return;
    }
    if (!record || editsOver(record)) return;
    if (target === 'notice') {
      if (dmNoticeDue(record, this.opts) !== undefined) await this.deps.onDmNoticeDue?.(jobId);
      return;
    }
    const final = isFinal(record.state);
    if (target === 'reply' && (!record.reply || !final)) return;
    const now = this.now();
    if (job.data.notBefore !== undefined && job.data.notBefore > now)
      throw await this.delay(job, token, job.data.notBefore - now, job.data.notBefore);
    const facts = messageFacts(record, target);
    let text: 'member' | 'withheld' | 'bare' =
      job.data.bare === true ? 'bare' : record.textWithheld === true ? 'withheld' : 'member';
    // The body follows the text step (a withheld record renders without the member's text).
    const body = () => {
      const r = text === 'bare' ? this.deps.renderers.withoutFreeText(record) : record;
      return target === 'reply' ? this.deps.renderers.renderReply(r) : this.deps.renderers.render(r, now);
    };
    let done = parseMarks(marks);
    for (;;) {
      const route = routeFor(facts, this.now(), final, this.opts);
      if (route.route === 'none' || route.route === 'skip') {
        if (final) this.log.error({ jobId, target, reason: route.reason }, 'final edit not delivered');
        else this.log.debug({ jobId, reason: route.reason }, 'progress edit dropped');
        return;
      }
      // Only the job's own message becomes a DM (a personal job has no channel line).
      if (route.route === 'dm' && target !== 'message') return;
      if (route.route === 'interaction') {
        // Finals too: they may take the reserve, not a sixth request of the window.
        const t = this.now();
        const readyAt = interactionReadyAt(done, final, t, this.opts);
        if (readyAt > t) throw await this.delay(job, token, readyAt - t);
      }
      if (route.route === 'channel') {
        const wait = await this.deps.budget.acquire(route.channelId, budgetKind(final), this.now());
        if (wait > 0) throw await this.delay(job, token, wait);
      }
      if (Date.now() - fencedAt >= this.ctx.lockMs / 4) {
        const checkedAt = Date.now();
        if (!(await stillOurs(job, token, this.ctx.lockMs))) {
          if (route.route === 'channel') this.deps.budget.released(route.channelId, this.now());
          this.log.warn({ jobId, target }, 'edit job no longer ours (paused past its lock): not sent');
          return;
        }
        fencedAt = checkedAt;
      }
      const outcome = await this.send(route, record, body());
      this.deps.metrics?.editsSent.inc({ route: route.route, outcome: editOutcome(outcome) });
      // Every answer but a 429 counts, finals and refusals too (as in the in-process
      // driver): the message's window and its next progress edit's spacing, a retry's included.
      if (route.route === 'interaction' && outcome.kind !== 'rate_limited') {
        const answeredAt = this.now();
        done = [...done, answeredAt].slice(-this.opts.interactionLimit);
        await this.deps.marks
          .set(markKey, JSON.stringify(done), { expiration: { type: 'PX', value: MARK_TTL_MS } })
          .catch(() => undefined);
        if (outcome.kind === 'ok' && target === 'message' && !final)
          // Until the message's next progress edit may go, its changes wait for one edit then.
          this.progress.space(jobId, interactionReadyAt(done, false, answeredAt, this.opts));
      }
      const decision = decide(
        outcome,
        {
          route: route.route,
          final,
          attempts: job.attemptsMade + 1,
          failures: job.attemptsMade + 1,
          withheld: text !== 'member' || !this.deps.onAutoMod,
          bare: text === 'bare',
          ...(route.route === 'channel' ? { channelId: route.channelId } : {}),
          random: Math.random(),
        },
        this.opts,
      );
      switch (decision.do) {
        case 'done':
          if (final && target === 'message') await this.record(jobId, { finalShown: true });
          if (outcome.kind === 'ok' && outcome.posted)
            await this.deps.onDirectMessage?.(jobId, outcome.posted).catch((err: unknown) => {
              this.log.warn({ err, jobId }, 'could not index the DM of a result');
            });
          this.deps.onDelivered?.(jobId, final);
          return;
        case 'retry':
          if (decision.block)
            this.deps.budget.blocked(decision.block.channelId, this.now() + decision.delayMs);
          if (!decision.failure) {
            const until = this.now() + decision.delayMs;
            throw await this.delay(
              job,
              token,
              decision.delayMs,
              route.route === 'interaction' ? until : undefined,
            );
          }
          // BullMQ retries it after the policy's backoff (backoffStrategy).
          throw new Error(outcome.kind === 'transient' ? outcome.message : outcome.kind);
        case 'gone':
          this.log.info({ jobId, target, reason: decision.reason }, 'job message gone: edits stopped');
          if (target === 'message') await this.record(jobId, { messageGone: true });
          return;
        case 'token_refused':
          // Stored before anything else is sent: no one, on any instance, uses it again.
          this.log.info({ jobId, target }, 'interaction token refused: never used again for this job');
          await this.record(jobId, { tokenRefused: true });
          facts.tokenRefused = true;
          continue;
        case 'dm_refused':
          this.log.info({ jobId }, 'the member does not accept DMs: the result stays in /tasks');
          await this.record(jobId, { dmRefused: true });
          return;
        case 'withhold':
          // The change queues this message again, rendered without the member's text.
          await this.deps.onAutoMod?.(jobId);
          return;
        case 'bare':
          // Refused even without the member's text: once more without any free text.
          text = 'bare';
          // Kept with the edit: a wait for the window (or a retry) must not send the refused body again.
          if (job.data.bare !== true) await job.updateData({ ...job.data, bare: true });
          continue;
        case 'drop':
          if (decision.level === 'error')
            this.log.error({ jobId, target, final, why: decision.why }, 'edit dropped');
          else this.log.debug({ jobId, why: decision.why }, 'progress edit dropped');
          return;
      }
    }
  }

  /** Puts the edit back to wait `ms`; `notBefore` holds it past an early promotion (a 429's wait). */
  private async delay(job: Job<EditData>, token: string | undefined, ms: number, notBefore?: number) {
    if (job.data.notBefore !== notBefore) {
      const { notBefore: _, ...rest } = job.data;
      await job.updateData(notBefore === undefined ? rest : { ...rest, notBefore });
    }
    const delayed = await delayJob(job, token, ms);
    // That edit renders the stored record when it runs: the changes until then need no edit of their own.
    if (job.data.target === 'message') this.progress.cover(job.data.jobId, this.now() + ms);
    return delayed;
  }

  /**
   * Stores what was learned with the job, retrying through a Redis blip (up to ~30 s):
   * the edit went out (or the token is dead), so this job must not send it again, and
   * the keeper must not ask for it again.
   */
  private async record(
    jobId: string,
    flags: { finalShown?: true; messageGone?: true; tokenRefused?: true; dmRefused?: true },
  ): Promise<void> {
    let delay = 100;
    for (const deadline = Date.now() + 30_000; ; delay = Math.min(delay * 2, 2000)) {
      try {
        await this.deps.lifecycle.mark(jobId, flags);
        return;
      } catch (err) {
        if (Date.now() + delay > deadline) {
          this.log.warn({ err, jobId, flags }, 'could not record what was learned about a job message');
          if (flags.tokenRefused) throw err; // the edit job is retried: the token is not touched meanwhile
          return;
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private async send(
    route: Extract<Route, { route: 'interaction' | 'channel' | 'dm' }>,
    record: JobRecord,
    payload: MessagePayload,
  ): Promise<{ kind: 'ok'; posted?: PostedMessage } | Failure> {
    try {
      if (route.route === 'interaction') {
        await this.deps.transport.editInteractionOriginal(
          route.applicationId,
          route.token,
          payload,
          ...(route.messageId ? [route.messageId] : []),
        );
      } else if (route.route === 'dm') {
        return {
          kind: 'ok',
          posted: await this.deps.transport.sendDirectMessage(record.userId, payload, record.id),
        };
      } else {
        await this.deps.transport.editChannelMessage(route.channelId, route.messageId, payload);
        this.deps.budget.settled(route.channelId, this.now());
      }
      return { kind: 'ok' };
    } catch (err) {
      const failure = classify(err, route.route);
      if (route.route === 'channel') {
        if (failure.kind === 'rate_limited') this.deps.budget.released(route.channelId, this.now());
        else this.deps.budget.settled(route.channelId, this.now());
      }
      return failure;
    }
  }
}

/** The answer times kept for a message's interaction edits (newest last); junk reads as none. */
function parseMarks(raw: string | null | undefined): number[] {
  if (!raw) return [];
  try {
    const v: unknown = JSON.parse(raw);
    if (Array.isArray(v)) return v.filter((n): n is number => typeof n === 'number' && Number.isFinite(n));
    // An older mark: one time.
    return typeof v === 'number' && Number.isFinite(v) ? [v] : [];
  } catch {
    return [];
  }
}
