import type { Logger } from 'pino';
import type { JobRecord, JobStore } from '../store/types.js';
import { isFinal } from '../store/merge.js';
import type { JobLifecycle } from './lifecycle.js';
import type { AfterFinalQueue } from './ports.js';

/**
 * What follows a job's final state, once: the member's fair-use slot freed, the
 * credits of a job the service never took given back, the gallery post. Every
 * step is idempotent (the ledger entry is gone once released, the gallery post is
 * claimed and posted with a nonce), so running it again after a crash or a store
 * blip changes nothing that was done; the job is marked settled only when all of
 * it succeeded, and leaves the open set then.
 */
export class AfterFinalWork {
  constructor(
    private readonly deps: {
      store: Pick<JobStore, 'get'>;
      lifecycle: Pick<JobLifecycle, 'mark'>;
      /** The work itself (CommunityService.jobEnded). Throws to be retried. */
      run(job: JobRecord): Promise<void>;
    },
  ) {}

  /** True when the job is settled (now or before); false when there is nothing to do yet. */
  async runFor(jobId: string): Promise<boolean> {
    const job = await this.deps.store.get(jobId);
    if (!job) return true;
    if (job.settledAt !== undefined) return true;
    if (!isFinal(job.state)) return false;
    await this.deps.run(job);
    await this.deps.lifecycle.mark(jobId, { settled: true });
    return true;
  }
}

/**
 * The after-final work in process: once at a time per job, retried with backoff
 * (1 s doubling to a minute) up to `attempts` times; past that the job's keeper
 * queues it again at its next check, so a long store outage delays it, never loses it.
 */
export class InProcessAfterFinal implements AfterFinalQueue {
  private readonly running = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Work running now: close() waits for it, so none writes after the store is closed. */
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly deps: {
      work: Pick<AfterFinalWork, 'runFor'>;
      logger: Logger;
      attempts?: number;
      baseDelayMs?: number;
    },
  ) {}

  async enqueue(jobId: string): Promise<void> {
    if (this.closed || this.running.has(jobId)) return;
    this.running.add(jobId);
    this.track(this.attempt(jobId, 1));
  }

  private track(run: Promise<void>): void {
    const tracked = run.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async attempt(jobId: string, n: number): Promise<void> {
    if (this.closed) {
      this.running.delete(jobId);
      return;
    }
    try {
      await this.deps.work.runFor(jobId);
      this.running.delete(jobId);
    } catch (err) {
      const max = this.deps.attempts ?? 8;
      if (n >= max) {
        this.running.delete(jobId);
        this.deps.logger.warn(
          { err, jobId, attempts: n },
          'after-final work failed; the job keeper tries again later',
        );
        return;
      }
      const delay = Math.min(60_000, (this.deps.baseDelayMs ?? 1000) * 2 ** (n - 1));
      this.deps.logger.warn(
        { err, jobId, attempt: n, retryInMs: delay },
        'after-final work failed; retrying',
      );
      const t = setTimeout(() => {
        this.timers.delete(t);
        this.track(this.attempt(jobId, n + 1));
      }, delay);
      t.unref();
      this.timers.add(t);
    }
  }

  /** Work in progress right now (tests). */
  get size(): number {
    return this.running.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }
}
