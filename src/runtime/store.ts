import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { lockDataDir } from '../services/store/data-dir-lock.js';
import { createStores, type Stores } from '../services/store/index.js';
import type { Disposers } from './disposers.js';

/** Opens the store (SQLite under DATA_DIR, or Redis); closed last, the data dir's lock after it. */
export async function openStore(deps: {
  config: Config;
  namespace: string;
  logger: Logger;
  disposers: Disposers;
}): Promise<Stores> {
  const { config } = deps;
  // The embedded store serves one process: a second bot on this DATA_DIR stops here.
  const dataDirLock = config.store.redisUrl ? undefined : await lockDataDir(config.store.dataDir);
  deps.disposers.add({ name: 'data dir lock', close: () => dataDirLock?.release() });
  const stores = await createStores({
    ...(config.store.redisUrl ? { redisUrl: config.store.redisUrl } : {}),
    dataDir: config.store.dataDir,
    jobTtlMs: config.store.jobTtlMs,
    eventWriteMs: Math.max(100, Math.round(config.jobs.webhookSilenceMs / 3)),
    logger: deps.logger.child({ component: 'store' }),
    namespace: deps.namespace,
  }).catch(async (err: unknown) => {
    await dataDirLock?.release();
    throw err;
  });
  deps.disposers.add({ name: 'store', close: () => stores.close() });
  return stores;
}
