import type { Logger } from 'pino';
import { isRedisAuthError, redactUrl } from './redis-errors.js';
import { redisConnection } from './redis-connection.js';

/**
 * Start-up check of REDIS_URL, before anything else is opened: connect, PING,
 * disconnect. Unreachable: retried with backoff (0.5 s doubling, at most 5 s
 * apart) until `timeoutMs`, with one warning line, then the last error is thrown.
 * Refused credentials are not retried: waiting cannot fix a wrong password.
 * Once running, the store reconnects by itself (see ./backend.ts); this only
 * decides whether to start at all.
 */
export async function waitForRedis(opts: {
  url: string;
  timeoutMs: number;
  logger: Logger;
  /** One attempt's connect timeout. */
  attemptTimeoutMs?: number;
  sleep?: (ms: number) => Promise<void>;
}): Promise<void> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = Date.now() + opts.timeoutMs;
  let delay = 500;
  let warned = false;
  for (;;) {
    try {
      await pingOnce(opts.url, opts.attemptTimeoutMs ?? 2000);
      if (warned) opts.logger.info('Redis answered; starting');
      return;
    } catch (err) {
      if (err instanceof RedisEvictionPolicyError) throw err;
      if (isRedisAuthError(err) || Date.now() + delay > deadline) throw err;
      if (!warned) {
        warned = true;
        opts.logger.warn(
          { redis: redactUrl(opts.url), waitSeconds: Math.round(opts.timeoutMs / 1000) },
          'Redis does not answer yet; waiting for it before starting',
        );
      }
      opts.logger.debug({ err }, 'Redis start check failed');
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }
}

async function pingOnce(url: string, timeoutMs: number): Promise<void> {
  let failure: unknown;
  const client = redisConnection(url, {
    disableOfflineQueue: true,
    socket: { connectTimeout: timeoutMs, reconnectStrategy: false },
  });
  // Without a listener an 'error' event would be thrown; connect() rejects with it anyway.
  client.on('error', (err: unknown) => {
    failure ??= err;
  });
  let policy: string | undefined;
  try {
    await client.connect();
    await client.ping();
    policy = evictionPolicy(await client.info('memory'));
  } catch (err) {
    throw failure ?? err;
  } finally {
    if (client.isOpen) client.destroy();
  }
  if (policy !== undefined && policy !== 'noeviction') throw new RedisEvictionPolicyError(policy);
}

/**
 * Redis would evict keys under memory pressure: a lock, a budget, a job record or a queued
 * job could vanish, losing work or money. The bot refuses to start (BullMQ's own rule too).
 */
export class RedisEvictionPolicyError extends Error {
  constructor(readonly policy: string) {
    super(`Redis maxmemory-policy is ${policy}`);
    this.name = 'RedisEvictionPolicyError';
  }
}

/** `maxmemory_policy` from INFO memory (readable where CONFIG GET is disabled, e.g. managed Redis). */
function evictionPolicy(info: string): string | undefined {
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}
