import type { Logger } from 'pino';
import type { JobStore } from '../store/types.js';

/**
 * RETENTION_DAYS: job records (their parameters, results and the member's history)
 * are deleted that long after their job ended, by an hourly sweep (a periodic task:
 * once an hour for the whole deployment, see services/shared/periodic.ts). A sweep with
 * nothing to do is one indexed range read, and two sweeps at once (a run taken over from
 * a dead instance) delete each job once (deletes are per job, under its lock).
 * Consent records and photo sessions expire on their own TTLs.
 */
export const SWEEP_INTERVAL_MS = 3_600_000;

export class RetentionSweeper {
  private running: Promise<number> | undefined;

  constructor(
    private readonly deps: {
      jobs: Pick<JobStore, 'sweepEnded'>;
      retentionMs: number;
      logger: Logger;
      now: () => number;
    },
  ) {}

  /** One sweep (a sweep already running is joined, not doubled); resolves with how many jobs went. */
  sweep(): Promise<number> {
    this.running ??= this.sweepOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async sweepOnce(): Promise<number> {
    try {
      const deleted = await this.deps.jobs.sweepEnded(this.deps.now() - this.deps.retentionMs);
      if (deleted > 0)
        this.deps.logger.info({ deleted }, 'retention: ended jobs past RETENTION_DAYS deleted');
      return deleted;
    } catch (err) {
      // The store is down: the next sweep catches up (records also expire a day later on their own).
      this.deps.logger.warn({ err }, 'retention sweep failed; retrying at the next one');
      return 0;
    }
  }
}
