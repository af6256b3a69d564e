import type { Queues } from './job-engine.js';
import { createCluster } from './cluster.js';
import type { Platform, PlatformDeps } from './platform.js';
import { openStore } from './store.js';

/**
 * The Redis deployment (any number of instances): the store on Redis, BullMQ for durable
 * and periodic work, the channels' edit budget and the gateway lease shared by every instance.
 */
export async function openRedis(deps: PlatformDeps & { redisUrl: string }): Promise<Platform> {
  const { config, namespace, logger, disposers } = deps;
  const stores = await openStore(deps);
  if (!stores.redis) throw new Error('the Redis store has no Redis client');
  const queues = await openQueues({ ...deps, lockMs: config.jobs.queueLockMs });
  disposers.add({ name: 'queues', close: () => queues.bull.close() });
  const { channelBudget, gatewayLease } = createCluster({ config, redis: stores.redis, namespace, logger });
  return {
    mode: 'redis',
    stores,
    queues,
    channelBudget,
    editBudget: channelBudget,
    gatewayLease,
    schedule: new queues.modules.periodic.BullSchedule(queues.bull, logger.child({ component: 'periodic' })),
  };
}

/** BullMQ's modules, loaded here only: the embedded store never loads them. */
async function openQueues(opts: PlatformDeps & { redisUrl: string; lockMs: number }): Promise<Queues> {
  const [bullModule, edits, jobs, periodic] = await Promise.all([
    import('../services/queues/bull.js'),
    import('../services/queues/job-edits.js'),
    import('../services/queues/job-queues.js'),
    import('../services/queues/periodic.js'),
  ]);
  const bull = await bullModule.openBull({
    url: opts.redisUrl,
    namespace: opts.namespace,
    logger: opts.logger.child({ component: 'queues' }),
    lockMs: opts.lockMs,
  });
  return { bull, modules: { edits, jobs, periodic } };
}
