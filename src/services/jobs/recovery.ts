import type { Logger } from 'pino';
import { FETCH_MANY_MAX } from '../media/client.js';
import type { JobStore } from '../store/types.js';
import type { JobKeyMemo } from './lifecycle.js';
import type { CheckScheduler } from './ports.js';

/**
 * The share of the service's read budget restart recovery takes: the first checks of
 * thousands of open jobs go at half the pace batched reads can serve them (20 tasks a
 * request, MEDIA_READS_PER_SECOND requests a second), so new jobs' polls, Refresh and
 * /tasks keep the other half, and a check seldom waits for its read: at the full pace the
 * reads queued up to three tenths of a second, and what a check held that long outlived
 * V8's young generation (the 10,000-job figure in docs/performance.md).
 */
const RECOVERY_SHARE = 0.5;
/** The checks are started in steps of a tenth of a second: their timers share a few hundred durations. */
const RECOVERY_STEP_MS = 100;
/** How long before its first check is due a page of open jobs is read and scheduled. */
const RECOVERY_LEAD_MS = 1_000;
/** After a failure mid-way (the store down), when the recovery runs again. */
const RECOVERY_RETRY_MS = 5_000;

/** Open jobs' first checks per second at start, from the service reads allowed per second. */
export function recoveryPerSecond(readsPerSecond: number): number {
  return Math.max(1, Math.floor(readsPerSecond * FETCH_MANY_MAX * RECOVERY_SHARE));
}

export interface RecoveryDeps {
  store: Pick<JobStore, 'openPages'>;
  checks: CheckScheduler;
  jobKeys?: JobKeyMemo;
  logger: Logger;
  /** Checks started per second (default: recoveryPerSecond of the default 10 reads a second). */
  perSecond?: number;
  retryMs?: number;
}

/**
 * Restart recovery: every open job (unfinished, or final with its final edit or
 * after-final work left) gets its keeper check soon. In process this is the whole
 * schedule after a restart; on BullMQ the checks are in Redis already and this only
 * brings waiting ones forward, so any number of instances may run it at once.
 *
 * The checks are spread at `perSecond`, and the records are read and scheduled at that
 * pace too, a page shortly before its checks are due, not all at start: read at once,
 * 10,000 records and their 10,000 schedule calls were in flight together for two
 * seconds, outlived V8's young generation and stayed in the old one as 23 MB of garbage
 * until its first full GC (docs/performance.md). `start` resolves once the first page is
 * scheduled (a restart with a few jobs is whole by then); `done` when every page is.
 */
export class OpenJobRecovery {
  readonly #abort = new AbortController();
  #done: Promise<number> | undefined;

  constructor(private readonly deps: RecoveryDeps) {}

  /**
   * Starts the recovery; resolves once the first page of open jobs is scheduled, and
   * rejects when that fails (the start fails, as it always did). A later failure (the store
   * down mid-way) is logged and the recovery runs again from the start after `retryMs`: a
   * job scheduled twice is only checked once more.
   */
  start(): Promise<void> {
    let paged = false;
    return new Promise<void>((resolve, reject) => {
      this.#done = (async () => {
        for (;;) {
          try {
            return await this.#run(() => {
              paged = true;
              resolve();
            });
          } catch (err) {
            if (!paged) throw err;
            this.deps.logger.error(
              { err },
              'restart recovery failed mid-way; resuming the open jobs again shortly',
            );
            await sleepFor(this.deps.retryMs ?? RECOVERY_RETRY_MS, this.#abort.signal);
            if (this.#abort.signal.aborted) return 0;
          }
        }
      })();
      // No open job at all resolves it here; once the first page resolved it, a later outcome changes nothing.
      this.#done.then(
        () => resolve(),
        (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))),
      );
    });
  }

  /** Resolves with how many open jobs were scheduled, once all are (or the recovery stopped). */
  get done(): Promise<number> {
    return this.#done ?? Promise.resolve(0);
  }

  /** Stops scheduling (shutdown): the pages not reached keep their checks (BullMQ) or wait for the next start. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done?.catch(() => undefined);
  }

  async #run(firstPage: () => void): Promise<number> {
    const { deps } = this;
    const signal = this.#abort.signal;
    const perSecond = deps.perSecond ?? recoveryPerSecond(10);
    const perStep = Math.max(1, Math.round((perSecond * RECOVERY_STEP_MS) / 1000));
    const dueAt = (i: number) => Math.floor(i / perStep) * RECOVERY_STEP_MS;
    deps.logger.info('resuming open jobs');
    const startedAt = Date.now();
    let i = 0;
    for await (const page of deps.store.openPages()) {
      if (signal.aborted) break;
      const at = Date.now();
      await Promise.all(
        page.map((job) => {
          deps.jobKeys?.remember(job);
          return deps.checks.schedule(job.id, Math.max(0, startedAt + dueAt(i++) - at));
        }),
      );
      firstPage();
      // The next page is read only shortly before its first check is due.
      const wait = startedAt + dueAt(i) - RECOVERY_LEAD_MS - Date.now();
      if (wait > 0) await sleepFor(wait, signal);
      if (signal.aborted) break;
    }
    deps.logger.info({ open: i, stopped: signal.aborted || undefined }, 'recovered open jobs');
    return i;
  }
}

function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
