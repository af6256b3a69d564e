import { MemoryChannelBudget } from '../services/discord/edits/channel-budget.js';
import { TimerSchedule } from '../services/shared/periodic.js';
import { lockDataDir } from '../services/store/data-dir-lock.js';
import { EDIT_BUDGET } from './cluster.js';
import type { Platform, PlatformDeps } from './platform.js';
import { openStore } from './store.js';

/** The embedded deployment: SQLite under DATA_DIR, one process, everything in memory and on timers. */
export async function openEmbedded(deps: PlatformDeps): Promise<Platform> {
  const { config, disposers } = deps;
  // The embedded store serves one process: a second bot on this DATA_DIR stops here.
  const dataDirLock = await lockDataDir(config.store.dataDir);
  // Closed last, after the store.
  disposers.add({ name: 'data dir lock', close: () => dataDirLock.release() });
  const stores = await openStore(deps).catch(async (err: unknown) => {
    await dataDirLock.release();
    throw err;
  });
  return {
    mode: 'embedded',
    stores,
    queues: undefined,
    channelBudget: undefined,
    editBudget: new MemoryChannelBudget(EDIT_BUDGET),
    gatewayLease: undefined,
    schedule: new TimerSchedule(deps.logger.child({ component: 'periodic' })),
  };
}
