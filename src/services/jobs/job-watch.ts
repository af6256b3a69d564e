import type { Logger } from 'pino';
import { MediaAuthError, MediaRequestRejectedError, MediaTaskNotInAnswerError } from '../media/errors.js';
import type { TaskReading } from '../media/ports.js';
import { isClosed, isFinal } from '../store/merge.js';
import type { JobRecord, JobStore } from '../store/types.js';
import type { Metrics } from '../../metrics.js';
import { jobError, jobErrorFromMedia } from './job-errors.js';
import type { JobLifecycle } from './lifecycle.js';
import type { AfterFinalQueue, MessageUpdates } from './ports.js';

export interface JobWatchOptions {
  maxDurationMs: number;
  pollInitialMs: number;
  pollMaxMs: number;
  webhookSilenceMs: number;
  /** Webhooks requested (PUBLIC_URL set): a job is polled only when they go silent. */
  webhooks: boolean;
  /** Consecutive "task not found" answers before a polled job is failed. */
  notFoundLimit?: number;
  /** How soon a final job with work left is looked at again. */
  settleRecheckMs?: number;
  /**
   * When this process started: a webhook heard before it may have been followed by others
   * this process missed while down (the service does not resend them), so the job is polled.
   */
  startedAt?: number;
  /**
   * How long a submission may be in flight (the service's timeouts and waiting out its 429s):
   * a job still `submitting` after that was cut off by a crash, and its outcome is unknown.
   */
  submitGraceMs: number;
}

/** What a poll keeps of a job's record while its read waits. */
interface PolledJob {
  id: string;
  operation: JobRecord['operation'];
  taskId: string;
  createdAt: number;
  submittedAt: number | undefined;
}

/** How soon a final job with its final edit or after-final work still to do is looked at again. */
const SETTLE_RECHECK_MS = 30_000;

/**
 * The keeper of one job: a check scheduled from before the job's record exists
 * until the job is settled (CheckScheduler runs it, in process or on BullMQ).
 * Each check reads the stored record and decides, so any instance can run it and
 * nothing depends on a notification:
 *
 * - unfinished: past its maximum duration it fails (a submission never confirmed:
 *   `not_confirmed`, credits back); without a task id (being submitted, or not
 *   confirmed) it waits for a webhook or the deadline; with webhooks it waits while
 *   they keep coming (their silence pushes the poll back); else it polls the
 *   service (batched) with a backoff that grows with the job's age;
 * - final but not settled: the final is shown again if it never reached the
 *   message, and the after-final work is queued again, until both are done.
 */
export class JobWatch {
  private readonly notFound = new Map<string, number>();
  private readonly now: () => number;

  constructor(
    private readonly deps: {
      store: Pick<JobStore, 'get' | 'unwrittenEventAt'>;
      lifecycle: Pick<JobLifecycle, 'applyResult' | 'update'>;
      reader: TaskReading;
      messages: MessageUpdates;
      afterFinal: AfterFinalQueue;
      logger: Logger;
      metrics?: Metrics;
      options: JobWatchOptions;
      now?: () => number;
      random?: () => number;
    },
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** One check of the job; resolves with when the next one is due (ms), or undefined when none is. */
  async check(jobId: string): Promise<number | undefined> {
    const job = await this.deps.store.get(jobId);
    if (!job || isClosed(job)) {
      this.notFound.delete(jobId);
      return undefined;
    }
    if (isFinal(job.state)) return this.settle(job);
    const o = this.deps.options;
    const age = this.now() - job.createdAt;
    if (age >= o.maxDurationMs) return this.expire(job);
    const left = o.maxDurationMs - age;
    if (job.taskId === undefined) {
      // A submission cut off (the instance died mid-call): its outcome is unknown, not failed.
      if (job.state === 'submitting' && age >= o.submitGraceMs) {
        this.deps.logger.warn({ jobId }, 'job was being submitted when its instance stopped; not confirmed');
        await this.deps.lifecycle.update(jobId, { state: 'unconfirmed', at: this.now() }, 'recovery');
        return left;
      }
      // Being submitted, or its answer was lost: a webhook (or the deadline) decides.
      return job.state === 'submitting' ? Math.min(left, o.submitGraceMs - age) : left;
    }
    const heardAt = Math.max(
      job.lastEventAt ?? Number.NEGATIVE_INFINITY,
      this.deps.store.unwrittenEventAt?.(jobId) ?? Number.NEGATIVE_INFINITY,
    );
    if (o.webhooks && Number.isFinite(heardAt) && heardAt >= (o.startedAt ?? Number.NEGATIVE_INFINITY)) {
      const quietFor = this.now() - heardAt;
      if (quietFor < o.webhookSilenceMs) return Math.min(left, o.webhookSilenceMs - quietFor);
    }
    // Only what the poll needs: the record is not held while the read waits its turn (a
    // paced read can wait a second; everything alive then ends up in V8's old generation).
    const { id, operation, createdAt, submittedAt } = job;
    return this.poll({ id, operation, taskId: job.taskId, createdAt, submittedAt }, left);
  }

  /** Final: the message shows it and the after-final work is done, or both are asked for again. */
  private async settle(job: JobRecord): Promise<number> {
    this.notFound.delete(job.id);
    if (job.finalShownAt === undefined && !job.messageGone && job.dmRefused !== true)
      this.deps.messages.jobChanged(job);
    if (job.settledAt === undefined) await this.deps.afterFinal.enqueue(job.id);
    return this.deps.options.settleRecheckMs ?? SETTLE_RECHECK_MS;
  }

  /** Past the maximum duration: failed (a job never confirmed by the service gets its credits back). */
  private async expire(job: JobRecord): Promise<number> {
    const minutes = Math.round(this.deps.options.maxDurationMs / 60_000);
    const log = this.deps.logger.child({ jobId: job.id, taskId: job.taskId, operation: job.operation });
    if (job.taskId === undefined) {
      log.warn('job never confirmed by the service within its maximum duration; failing it');
      await this.deps.lifecycle.update(
        job.id,
        {
          state: 'failed',
          error: jobError(
            'not_confirmed',
            `The media service never confirmed this job within ${minutes} minutes, so it is treated as not received and your credits were returned.`,
          ),
          at: this.now(),
        },
        'poll',
      );
    } else {
      log.warn('job exceeded its maximum duration');
      await this.deps.lifecycle.update(
        job.id,
        {
          state: 'failed',
          error: jobError(
            'timed_out',
            `No result after ${minutes} minutes. The service may still finish it: check /tasks id:${job.taskId}.`,
          ),
          at: this.now(),
        },
        'poll',
      );
    }
    return 0;
  }

  private async poll(job: PolledJob, left: number): Promise<number | undefined> {
    const { id: jobId, taskId, operation } = job;
    try {
      const startedAt = Date.now();
      const result = await this.deps.reader.read(operation, taskId);
      // Logged once the read is back, with how long it took: tests check one poller per job at a time.
      if (this.deps.logger.isLevelEnabled('debug'))
        this.deps.logger.debug({ jobId, ms: Date.now() - startedAt }, 'job polled');
      this.deps.metrics?.polls.inc({ outcome: result.state });
      this.notFound.delete(jobId);
      const updated = await this.deps.lifecycle.applyResult(jobId, result, 'poll');
      if (!updated) return undefined;
      if (isFinal(updated.state)) return this.deps.options.settleRecheckMs ?? SETTLE_RECHECK_MS;
      return Math.min(left, this.backoff(updated));
    } catch (err) {
      this.deps.metrics?.polls.inc({ outcome: 'error' });
      const log = this.deps.logger.child({ jobId, taskId, operation });
      if (err instanceof MediaAuthError) {
        log.error('the media service rejected the API key while polling; failing the job');
        await this.deps.lifecycle.update(
          jobId,
          { state: 'failed', error: jobErrorFromMedia(err), at: this.now() },
          'poll',
        );
        return 0;
      }
      // The service says it has no such task: a rejected fetch, or a batch answer without it.
      if (err instanceof MediaRequestRejectedError || err instanceof MediaTaskNotInAnswerError) {
        const n = (this.notFound.get(jobId) ?? 0) + 1;
        this.notFound.set(jobId, n);
        if (n >= (this.deps.options.notFoundLimit ?? 3)) {
          this.notFound.delete(jobId);
          log.warn({ err }, 'the service keeps saying it has no such task; failing the job');
          await this.deps.lifecycle.update(
            jobId,
            { state: 'failed', error: jobErrorFromMedia(err), at: this.now() },
            'poll',
          );
          return 0;
        }
      }
      log.warn({ err }, 'poll failed; backing off');
      return Math.min(left, this.backoff(job));
    }
  }

  /**
   * The next poll grows with the job's age (from POLL_INITIAL_MS to POLL_MAX_MS), with
   * ±20 % jitter: no per-job counter to keep, so any instance computes the same.
   */
  private backoff(job: { createdAt: number; submittedAt?: number | undefined }): number {
    const o = this.deps.options;
    const age = this.now() - (job.submittedAt ?? job.createdAt);
    const base = Math.min(o.pollMaxMs, Math.max(o.pollInitialMs, age / 2));
    return Math.round(base * (0.8 + (this.deps.random ?? Math.random)() * 0.4));
  }
}
