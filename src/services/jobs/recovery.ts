import type { Logger } from 'pino';
import type { JobStore } from '../store/types.js';
import type { JobKeyMemo } from './lifecycle.js';
import type { CheckScheduler } from './ports.js';

/**
 * Open jobs' checks per second at start: the first checks of thousands of jobs are
 * spread (in whole seconds, so their timers share a few hundred durations), at the
 * pace batched reads can serve them (20 tasks a request, a few requests a second).
 */
const RECOVERY_PER_SECOND = 200;

/**
 * Restart recovery: every open job (unfinished, or final with its final edit or
 * after-final work left) gets its keeper check soon, a page of records at a time.
 * In process this is the whole schedule after a restart; on BullMQ the checks
 * are in Redis already and this only brings waiting ones forward, so any number of
 * instances may run it at once.
 */
export async function recoverOpenJobs(deps: {
  store: Pick<JobStore, 'openPages'>;
  checks: CheckScheduler;
  jobKeys?: JobKeyMemo;
  logger: Logger;
  perSecond?: number;
}): Promise<number> {
  const perSecond = deps.perSecond ?? RECOVERY_PER_SECOND;
  let i = 0;
  for await (const page of deps.store.openPages()) {
    await Promise.all(
      page.map((job) => {
        deps.jobKeys?.remember(job);
        const delay = Math.floor(i++ / perSecond) * 1000;
        return deps.checks.schedule(job.id, delay);
      }),
    );
  }
  deps.logger.info({ open: i }, 'recovered open jobs');
  return i;
}
