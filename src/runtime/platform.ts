import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { GatewayLease } from '../services/cluster/gateway-lease.js';
import type { ChannelBudget } from '../services/discord/edits/channel-budget.js';
import type { PeriodicSchedule } from '../services/shared/periodic.js';
import type { Stores } from '../services/store/index.js';
import type { Disposers } from './disposers.js';
import type { Queues } from './job-engine.js';

/**
 * What the kind of deployment decides, as ports: embedded (SQLite, one process:
 * runtime/embedded.ts) or Redis (any number of instances: runtime/redis.ts). Each opens its
 * parts and registers their stops; the rest of the app is the same for both.
 */
export interface Platform {
  readonly mode: 'embedded' | 'redis';
  stores: Stores;
  /** Redis: BullMQ for durable work (the embedded store never loads it). */
  queues: Queues | undefined;
  /** Redis: the channel budget every instance counts against. */
  channelBudget: ChannelBudget | undefined;
  /** The budget the edit queue and /privacy delete's edits share (one process: in memory). */
  editBudget: ChannelBudget;
  /** Redis gateway mode: which instance holds the gateway. */
  gatewayLease: GatewayLease | undefined;
  /** When the periodic tasks run: once per period for the deployment (tasks added by runtime/periodic.ts). */
  schedule: PeriodicSchedule;
}

export interface PlatformDeps {
  config: Config;
  /** Key namespace in the store (tests isolate runs sharing one Redis). */
  namespace: string;
  logger: Logger;
  disposers: Disposers;
}
