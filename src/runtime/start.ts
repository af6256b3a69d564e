import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { SyncResult } from '../services/discord/registration/command-sync.js';
import type { CheckScheduler } from '../services/jobs/ports.js';
import { OpenJobRecovery, recoveryPerSecond } from '../services/jobs/recovery.js';
import type { PeriodicSchedule } from '../services/shared/periodic.js';
import type { Stores } from '../services/store/index.js';
import type { TrainingServices } from '../services/training/index.js';
import { inPhase } from '../start-errors.js';
import type { JobKeys } from '../webhooks/job-keys.js';
import { openMetricsWarning, type HttpServer } from '../webhooks/server.js';
import type { buildMetricsHttp } from './http.js';
import type { Disposers } from './disposers.js';
import type { Interactions } from './interactions.js';

type MetricsHttp = Awaited<ReturnType<typeof buildMetricsHttp>>;

/**
 * The start, in order: the store's side (photo spool, periodic tasks), the HTTP server (and
 * the metrics one), Discord, the commands, then every open job resumed. A failing phase is
 * named (start-errors.ts).
 */
export async function startApp(deps: {
  config: Config;
  stores: Stores;
  training: TrainingServices;
  periodic: PeriodicSchedule;
  server: HttpServer;
  metricsServer: MetricsHttp;
  interactions: Interactions;
  checks: CheckScheduler;
  jobKeys: JobKeys;
  logger: Logger;
  disposers: Disposers;
}): Promise<{ url: string; commands: SyncResult[] | undefined }> {
  const { config, stores, server, metricsServer, interactions, logger } = deps;
  await inPhase('store', () => deps.training.start());
  // The retention sweep and the account's balance (metric, low-credit warning, /settings show).
  await inPhase('store', () => deps.periodic.start());
  const url = await inPhase('http', () => server.listen({ host: config.http.host, port: config.http.port }));
  logger.info(
    { url, store: stores.backend, mode: config.publicUrl ? 'webhooks' : 'polling' },
    'HTTP server listening',
  );
  const openMetrics = openMetricsWarning(config);
  if (openMetrics) logger.warn({ host: config.http.host }, openMetrics);
  if (metricsServer && config.metrics.port !== undefined) {
    const metricsPort = config.metrics.port;
    const metricsUrl = await inPhase('metrics-http', () =>
      metricsServer.listen({ host: config.http.host, port: metricsPort }),
    );
    logger.info({ url: `${metricsUrl}/metrics` }, 'metrics listening');
  }
  await interactions.connect(url);
  const commands = await interactions.syncCommands();
  // Open jobs are resumed at their checks' pace (recovery.ts): the start waits for the first
  // page only, and the shutdown stops the rest before the checks close.
  const recovery = new OpenJobRecovery({
    store: stores.jobs,
    checks: deps.checks,
    jobKeys: deps.jobKeys,
    logger: logger.child({ component: 'jobs' }),
    perSecond: recoveryPerSecond(config.media.readsPerSecond),
  });
  deps.disposers.add({ name: 'restart recovery', close: () => recovery.stop() });
  await recovery.start();
  return { url, commands };
}

/** The stop: everything registered closed in reverse order, once however often it is asked for. */
export function stopOnce(disposers: Disposers, logger: Logger): (drainMs?: number) => Promise<void> {
  let stopping: Promise<void> | undefined;
  return (drainMs = 10_000) => {
    stopping ??= (async () => {
      logger.info('shutting down');
      await disposers.closeAll(logger, { drainMs });
      logger.info('stopped');
    })();
    return stopping;
  };
}
