import type { Logger } from 'pino';
import { AfterFinalWork, InProcessAfterFinal } from '../../src/services/jobs/after-final.js';
import { JobLifecycle, type LifecycleOptions } from '../../src/services/jobs/lifecycle.js';
import { JobWatch } from '../../src/services/jobs/job-watch.js';
import type { TaskReading } from '../../src/services/media/ports.js';
import { TimerChecks } from '../../src/services/jobs/timer-checks.js';
import type { Metrics } from '../../src/metrics.js';
import type { JobRecord, JobStore } from '../../src/services/store/types.js';

export interface JobCore {
  lifecycle: JobLifecycle;
  watch: JobWatch;
  checks: TimerChecks;
  /** Every record handed to the message updates, in order. */
  changed: JobRecord[];
  /** Jobs whose after-final work ran. */
  settled: string[];
  stop(): Promise<void>;
}

/**
 * The job core as the app wires it in embedded mode (in-process checks and after-final
 * work), with the message updates recorded instead of sent: for tests of the lifecycle
 * and the keeper on a real store.
 */
export function inProcessJobs(opts: {
  store: JobStore;
  logger: Logger;
  reader?: TaskReading;
  options?: Partial<LifecycleOptions> & { webhooks?: boolean };
  now?: () => number;
  metrics?: Metrics;
  onChanged?: (job: JobRecord) => void;
  afterFinal?: (job: JobRecord) => Promise<void>;
}): JobCore {
  const changed: JobRecord[] = [];
  const settled: string[] = [];
  const options: LifecycleOptions = {
    maxDurationMs: 600_000,
    pollInitialMs: 60_000,
    pollMaxMs: 60_000,
    webhookSilenceMs: 60_000,
    ...opts.options,
  };
  const checks = new TimerChecks({ logger: opts.logger, retryMs: options.pollInitialMs });
  const messages = {
    jobChanged: (job: JobRecord) => {
      changed.push(job);
      opts.onChanged?.(job);
    },
  };
  const work = new AfterFinalWork({
    store: opts.store,
    lifecycle: { mark: (id, flags) => lifecycle.mark(id, flags) },
    run: async (job) => {
      settled.push(job.id);
      await opts.afterFinal?.(job);
    },
  });
  const afterFinal = new InProcessAfterFinal({ work, logger: opts.logger });
  const lifecycle: JobLifecycle = new JobLifecycle({
    store: opts.store,
    checks,
    messages,
    afterFinal,
    logger: opts.logger,
    options,
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
  });
  const reader: TaskReading = opts.reader ?? {
    read: () => Promise.reject(new Error('no polling in this test')),
  };
  const watch = new JobWatch({
    store: opts.store,
    lifecycle,
    reader,
    messages,
    afterFinal,
    logger: opts.logger,
    options: {
      ...options,
      webhooks: opts.options?.webhooks ?? options.publicUrl !== undefined,
      submitGraceMs: 10 * 60_000,
    },
    ...(opts.now ? { now: opts.now } : {}),
  });
  checks.start((id) => watch.check(id));
  return {
    lifecycle,
    watch,
    checks,
    changed,
    settled,
    async stop() {
      lifecycle.stop();
      await checks.close();
      await afterFinal.close();
    },
  };
}
