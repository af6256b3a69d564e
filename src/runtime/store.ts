import type { Stores } from '../services/store/index.js';
import { jobOperations } from '../services/operations/index.js';
import { createStores } from '../services/store/index.js';
import type { PlatformDeps } from './platform.js';

/** Opens the store (SQLite under DATA_DIR, or Redis at `redisUrl`); closed after everything that uses it. */
export async function openStore(deps: PlatformDeps & { redisUrl?: string }): Promise<Stores> {
  const { config } = deps;
  const stores = await createStores({
    ...(deps.redisUrl ? { redisUrl: deps.redisUrl } : {}),
    dataDir: config.store.dataDir,
    jobTtlMs: config.store.jobTtlMs,
    eventWriteMs: Math.max(100, Math.round(config.jobs.webhookSilenceMs / 3)),
    logger: deps.logger.child({ component: 'store' }),
    namespace: deps.namespace,
    operations: jobOperations,
  });
  deps.disposers.add({ name: 'store', close: () => stores.close() });
  return stores;
}
