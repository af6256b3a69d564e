import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { AccountMonitor } from '../services/media/account-monitor.js';
import { RetentionSweeper, SWEEP_INTERVAL_MS } from '../services/privacy/retention.js';
import type { PeriodicSchedule } from '../services/shared/periodic.js';
import type { Stores } from '../services/store/index.js';
import type { Disposers } from './disposers.js';
import { ACCOUNT_READ_EVERY_MS } from './media.js';

/**
 * The deployment's periodic work, each task once per period on the platform's schedule: one
 * BullMQ Job Scheduler each on Redis (whichever instance's worker takes it), a timer each in
 * process otherwise. The photo spool's sweep is not among them: each instance sweeps its own
 * disk (PhotoSpool).
 */
export function createPeriodicWork(deps: {
  config: Config;
  schedule: PeriodicSchedule;
  stores: Stores;
  account: AccountMonitor;
  /** Between two readings of the service account (default ACCOUNT_READ_EVERY_MS). */
  accountReadEveryMs: number | undefined;
  disposers: Disposers;
  logger: Logger;
  now: () => number;
}): PeriodicSchedule {
  const { schedule, logger } = deps;
  const retention = new RetentionSweeper({
    jobs: deps.stores.jobs,
    retentionMs: deps.config.privacy.retentionDays * 86_400_000,
    logger: logger.child({ component: 'retention' }),
    now: deps.now,
  });
  schedule.add({ name: 'retention-sweep', everyMs: SWEEP_INTERVAL_MS, run: () => retention.sweep() });
  // The balance is known (metric, low-credit warning, /settings show) from the start, not after a 402.
  schedule.add({
    name: 'account-reading',
    everyMs: deps.accountReadEveryMs ?? ACCOUNT_READ_EVERY_MS,
    run: () => deps.account.refresh(),
  });
  deps.disposers.add({ name: 'periodic work', close: () => schedule.close() });
  return schedule;
}
