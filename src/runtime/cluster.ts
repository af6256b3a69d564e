import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { GatewayLease } from '../services/cluster/gateway-lease.js';
import { RedisChannelBudget } from '../services/cluster/redis-channel-budget.js';
import { DEFAULT_EDIT_QUEUE_OPTIONS } from '../services/discord/edits/edit-queue.js';
import type { RedisClient } from '../services/store/backend.js';

/** Each channel's edit budget, in memory (one process) or in Redis (every instance counts against it). */
export const EDIT_BUDGET = {
  limit: DEFAULT_EDIT_QUEUE_OPTIONS.channelLimit,
  windowMs: DEFAULT_EDIT_QUEUE_OPTIONS.channelWindowMs,
  finalReserve: DEFAULT_EDIT_QUEUE_OPTIONS.finalReserve,
};

/** What instances share on Redis: the channels' edit budget and the gateway lease. */
export interface Cluster {
  channelBudget: RedisChannelBudget;
  /** Gateway mode: which instance holds the gateway. */
  gatewayLease: GatewayLease | undefined;
}

export function createCluster(deps: {
  config: Config;
  redis: RedisClient;
  namespace: string;
  logger: Logger;
}): Cluster {
  const { redis } = deps;
  const prefix = `${deps.namespace}::cluster:`;
  const logger = deps.logger.child({ component: 'cluster' });
  return {
    channelBudget: new RedisChannelBudget({ redis, prefix, logger, ...EDIT_BUDGET }),
    gatewayLease:
      deps.config.discord.interactions.mode === 'gateway'
        ? new GatewayLease({ redis, prefix, instanceId: deps.config.instanceId, logger })
        : undefined,
  };
}
