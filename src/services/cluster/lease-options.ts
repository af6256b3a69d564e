import type { Logger } from 'pino';
import type { RedisClient } from '../store/backend.js';

/** What every Redis lease of the multi-instance mode is given. */
export interface LeaseOptions {
  redis: RedisClient;
  /** Key prefix, e.g. `mjb::cluster:`. */
  prefix: string;
  /** INSTANCE_ID: the lease holder's name. */
  instanceId: string;
  logger: Logger;
  /** Lease length (default 10 s). */
  ttlMs?: number;
  /** How often a holder renews (default a third of the lease or 3 s). */
  renewMs?: number;
}
