import type { Logger } from 'pino';
import type { JobStore } from '../store/types.js';
import type { JobKeyMemo } from './lifecycle.js';
import type { CheckScheduler } from './ports.js';

/**
 * Open jobs' checks per second at start: the first checks of thousands of jobs are
 * spread at the pace batched reads can serve them (20 tasks a request, ten requests a
 * second), in steps of a tenth of a second: a check then waits for its read a tenth of a
 * second at most, instead of up to a second with a whole second's checks started at once
 * (what waits that long outlives V8's young generation: 10,000 jobs left megabytes of
 * garbage in the old one). Their timers share a few hundred durations.
 */
const RECOVERY_PER_SECOND = 200;
const RECOVERY_STEP_MS = 100;

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
  const perStep = Math.max(1, Math.round((perSecond * RECOVERY_STEP_MS) / 1000));
  let i = 0;
  for await (const page of deps.store.openPages()) {
    await Promise.all(
      page.map((job) => {
        deps.jobKeys?.remember(job);
        const delay = Math.floor(i++ / perStep) * RECOVERY_STEP_MS;
        return deps.checks.schedule(job.id, delay);
      }),
    );
  }
  deps.logger.info({ open: i }, 'recovered open jobs');
  return i;
}
