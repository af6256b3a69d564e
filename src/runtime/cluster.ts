import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { GatewayLease } from '../services/cluster/gateway-lease.js';
import { RedisChannelBudget } from '../services/cluster/redis-channel-budget.js';
import { MemoryChannelBudget, type ChannelBudget } from '../services/discord/edits/channel-budget.js';
import { DEFAULT_EDIT_QUEUE_OPTIONS } from '../services/discord/edits/edit-queue.js';
import type { Stores } from '../services/store/index.js';

/** What instances share on Redis: the channels' edit budget and the gateway lease. */
export interface Cluster {
  /** Redis: the channel budget every instance counts against. */
  channelBudget: ChannelBudget | undefined;
  /** The budget the edit queue and /privacy delete's edits share (one process: in memory). */
  editBudget: ChannelBudget;
  /** Redis gateway mode: which instance holds the gateway. */
  gatewayLease: GatewayLease | undefined;
}

export function createCluster(deps: {
  config: Config;
  redis: Stores['redis'];
  namespace: string;
  logger: Logger;
}): Cluster {
  const { redis } = deps;
  const prefix = `${deps.namespace}::cluster:`;
  const logger = deps.logger.child({ component: 'cluster' });
  const budget = {
    limit: DEFAULT_EDIT_QUEUE_OPTIONS.channelLimit,
    windowMs: DEFAULT_EDIT_QUEUE_OPTIONS.channelWindowMs,
    finalReserve: DEFAULT_EDIT_QUEUE_OPTIONS.finalReserve,
  };
  const channelBudget = redis ? new RedisChannelBudget({ redis, prefix, logger, ...budget }) : undefined;
  return {
    channelBudget,
    editBudget: channelBudget ?? new MemoryChannelBudget(budget),
    gatewayLease:
      redis && deps.config.discord.interactions.mode === 'gateway'
        ? new GatewayLease({ redis, prefix, instanceId: deps.config.instanceId, logger })
        : undefined,
  };
}
