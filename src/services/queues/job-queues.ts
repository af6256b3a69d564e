import type { Logger } from 'pino';
import type { AfterFinalQueue, CheckScheduler } from '../jobs/ports.js';
import { delayJob, queueWithWorker, type BullContext, type QueueHandle } from './bull.js';

/**
 * The job keeper on BullMQ: one delayed BullMQ job per open media job
 * (deduplicated by the media job's id), so "one check of a job at a time" and
 * "every open job is looked after, whichever instance dies" come from the queue.
 * A check reschedules itself (moveToDelayed) for when it wants to run again;
 * `schedule` reschedules a waiting check (deduplication with `reschedule`), and is
 * ignored while the check runs (the running check reads the latest record).
 */
export class BullChecks implements CheckScheduler {
  private readonly handle: QueueHandle<{ jobId: string }>;

  constructor(
    ctx: BullContext,
    check: (jobId: string) => Promise<number | undefined>,
    opts: { retryMs: number; concurrency?: number; logger: Logger },
  ) {
    this.handle = queueWithWorker<{ jobId: string }>(
      ctx,
      'checks',
      async (job, token) => {
        let next: number | undefined;
        try {
          next = await check(job.data.jobId);
        } catch (err) {
          // Never failed: a store or service outage only delays the next check.
          opts.logger.warn({ err, jobId: job.data.jobId }, 'job check failed; trying again shortly');
          next = opts.retryMs;
        }
        if (next !== undefined) throw await delayJob(job, token, next);
      },
      {
        // Checks are short and mostly wait on the service (batched reads): many at once.
        concurrency: opts.concurrency ?? 100,
        // A check is never given up: one that fails anyway (Redis dropped the connection as it
        // rescheduled itself) is tried again, so no open job ever loses its keeper.
        defaultJobOptions: {
          attempts: Number.MAX_SAFE_INTEGER,
          backoff: { type: 'fixed', delay: opts.retryMs },
        },
      },
    );
  }

  async schedule(jobId: string, delayMs: number): Promise<void> {
    await this.handle.queue.add(
      'check',
      { jobId },
      { delay: Math.max(0, Math.round(delayMs)), deduplication: { id: jobId, reschedule: true } },
    );
  }

  pending(): number | undefined {
    return undefined;
  }

  /** Waiting, delayed and running checks in Redis (all instances). */
  async count(): Promise<number> {
    const c = await this.handle.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return Object.values(c).reduce((a, b) => a + b, 0);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/**
 * The after-final work on BullMQ: one job per final media job (its id deduplicates
 * it), retried with backoff; the work is idempotent, so a worker dying half-way or
 * a retry after a store blip changes nothing that was done. Past its attempts the
 * media job's keeper queues it again.
 */
export class BullAfterFinal implements AfterFinalQueue {
  private readonly handle: QueueHandle<{ jobId: string }>;

  constructor(
    ctx: BullContext,
    run: (jobId: string) => Promise<unknown>,
    opts: { concurrency?: number } = {},
  ) {
    this.handle = queueWithWorker<{ jobId: string }>(
      ctx,
      'after-final',
      async (job) => {
        await run(job.data.jobId);
      },
      {
        // Gallery posts download files: a few at once per instance.
        concurrency: opts.concurrency ?? 8,
        defaultJobOptions: { attempts: 8, backoff: { type: 'exponential', delay: 1000 } },
      },
    );
  }

  async enqueue(jobId: string): Promise<void> {
    await this.handle.queue.add('after-final', { jobId }, { deduplication: { id: jobId } });
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
