import type { Logger } from 'pino';
import type { CheckScheduler } from './ports.js';

/**
 * The job keeper's schedule in process (the embedded store: one process, so a
 * timer per open job is the whole schedule; after a restart, recovery schedules
 * every open job again). Timers keep only the job id. A check that fails (the
 * store down) is tried again after `retryMs`.
 */
export class TimerChecks implements CheckScheduler {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<string>();
  /** Checks running now: close() waits for them, so none writes after the store is closed. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Scheduled while its check ran: applied when the check ends, unless the check asks for sooner. */
  private readonly requested = new Map<string, number>();
  private stopped = false;
  private check: ((jobId: string) => Promise<number | undefined>) | undefined;

  constructor(private readonly deps: { logger: Logger; retryMs: number; now?: () => number }) {}

  /** Where checks go (the job watch); set once at composition. */
  start(check: (jobId: string) => Promise<number | undefined>): void {
    this.check = check;
  }

  async schedule(jobId: string, delayMs: number): Promise<void> {
    if (this.stopped) return;
    if (this.running.has(jobId)) {
      const at = Date.now() + delayMs;
      this.requested.set(jobId, Math.min(at, this.requested.get(jobId) ?? at));
      return;
    }
    this.arm(jobId, delayMs);
  }

  pending(): number {
    return this.timers.size;
  }

  /** Checks running now (tests on virtual time wait for 0 before the clock moves on). */
  inFlightCount(): number {
    return this.inFlight.size;
  }

  async close(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  private arm(jobId: string, delayMs: number): void {
    const old = this.timers.get(jobId);
    if (old) clearTimeout(old);
    const timer = setTimeout(
      () => {
        const run = this.run(jobId).finally(() => this.inFlight.delete(run));
        this.inFlight.add(run);
      },
      Math.max(0, delayMs),
    );
    timer.unref();
    this.timers.set(jobId, timer);
  }

  private async run(jobId: string): Promise<void> {
    this.timers.delete(jobId);
    if (this.stopped || !this.check) return;
    this.running.add(jobId);
    let next: number | undefined;
    try {
      next = await this.check(jobId);
    } catch (err) {
      this.deps.logger.warn({ err, jobId }, 'job check failed; trying again shortly');
      next = this.deps.retryMs;
    } finally {
      this.running.delete(jobId);
    }
    const asked = this.requested.get(jobId);
    this.requested.delete(jobId);
    if (this.stopped) return;
    if (asked !== undefined) {
      const askedIn = Math.max(0, asked - Date.now());
      next = next === undefined ? askedIn : Math.min(next, askedIn);
    }
    if (next !== undefined) this.arm(jobId, next);
  }
}
