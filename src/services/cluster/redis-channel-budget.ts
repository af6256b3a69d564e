import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChannelBudget, EditKind, MemoryChannelBudgetOptions } from '../discord/channel-budget.js';
import type { RedisClient } from '../store/backend.js';

/**
 * The bot-token edit budget of each channel, shared by every instance on one
 * Redis: the same rules as MemoryChannelBudget (a slot counts from its grant until
 * windowMs after Discord answered, progress leaves `finalReserve` slots for
 * finals, a 429 blocks the channel), kept in Redis and decided by one Lua script
 * per request on Redis's clock (TIME), so instances never disagree on time.
 *
 * Why a script of our own and not rate-limiter-flexible's RateLimiterRedis (already
 * a dependency, used for webhook auth failures): its windows are counted from the
 * request, while 0 429s needs them counted from Discord's *answer* (latency must
 * never squeeze a sixth edit into Discord's window), and it has no reserve for
 * finals. Why not a REST proxy (@discordjs/proxy): it shares Discord's buckets but
 * only learns them from 429-free headers after the fact, cannot put finals first,
 * and would be one more service to run.
 *
 * Keys (per channel): `cb:{c}:open` grants not yet answered (sorted by expiry:
 * a grant whose instance died frees itself after OPEN_TTL_MS), `cb:{c}:done`
 * answer times within the window, `cb:{c}:blocked` / `cb:global:blocked` 429s.
 */

const OPEN_TTL_MS = 30_000;

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local blocked = math.max(tonumber(redis.call('get', KEYS[3]) or '0'), tonumber(redis.call('get', KEYS[4]) or '0'))
if blocked > now then return blocked - now end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
redis.call('zremrangebyscore', KEYS[2], '-inf', now - window)
local cap = tonumber(ARGV[2])
local used = redis.call('zcard', KEYS[1]) + redis.call('zcard', KEYS[2])
if used < cap then
  redis.call('zadd', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
  redis.call('pexpire', KEYS[1], tonumber(ARGV[4]) * 2)
  return 0
end
local oldest = redis.call('zrange', KEYS[2], used - cap, used - cap, 'WITHSCORES')
if oldest[2] == nil then return window end
return math.max(1, tonumber(oldest[2]) + window - now)`;

const SETTLE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zrem', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  redis.call('zadd', KEYS[2], now, ARGV[1])
  redis.call('pexpire', KEYS[2], tonumber(ARGV[3]) * 2)
end
return 1`;

const BLOCK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
if untilMs > tonumber(redis.call('get', KEYS[1]) or '0') then
  redis.call('set', KEYS[1], untilMs, 'PX', tonumber(ARGV[1]) + 1000)
end
return 1`;

export class RedisChannelBudget implements ChannelBudget {
  /** This instance's grants per channel, not yet answered (FIFO). */
  private readonly grants = new Map<string, string[]>();

  constructor(
    private readonly deps: {
      redis: RedisClient;
      prefix: string;
      logger: Logger;
    } & MemoryChannelBudgetOptions,
  ) {}

  private keys(channelId: string): string[] {
    const p = `${this.deps.prefix}cb:`;
    return [
      `${p}${channelId}:open`,
      `${p}${channelId}:done`,
      `${p}${channelId}:blocked`,
      `${p}global:blocked`,
    ];
  }

  async acquire(channelId: string, kind: EditKind, _now: number): Promise<number> {
    const { limit, finalReserve, windowMs } = this.deps;
    const cap = kind === 'final' ? limit : Math.max(1, limit - finalReserve);
    const grant = randomBytes(8).toString('hex');
    const wait = Number(
      await this.deps.redis.eval(ACQUIRE, this.keys(channelId), [
        String(windowMs),
        String(cap),
        grant,
        String(OPEN_TTL_MS),
      ]),
    );
    if (wait === 0) {
      const list = this.grants.get(channelId) ?? [];
      list.push(grant);
      this.grants.set(channelId, list);
    }
    return wait;
  }

  settled(channelId: string): void {
    this.finish(channelId, true);
  }

  released(channelId: string): void {
    this.finish(channelId, false);
  }

  blocked(channelId: string | undefined, until: number): void {
    const ms = Math.max(1, Math.ceil(until - Date.now()));
    const key =
      channelId === undefined
        ? `${this.deps.prefix}cb:global:blocked`
        : `${this.deps.prefix}cb:${channelId}:blocked`;
    this.deps.redis
      .eval(BLOCK, [key], [String(ms)])
      .catch((err: unknown) => this.deps.logger.warn({ err, channelId }, 'could not share a rate limit'));
  }

  private finish(channelId: string, counted: boolean): void {
    const list = this.grants.get(channelId);
    const grant = list?.shift();
    if (list && list.length === 0) this.grants.delete(channelId);
    if (grant === undefined) return;
    const [open, done] = this.keys(channelId);
    this.deps.redis
      .eval(SETTLE, [open ?? '', done ?? ''], [grant, counted ? '1' : '0', String(this.deps.windowMs)])
      .catch((err: unknown) => this.deps.logger.warn({ err, channelId }, 'could not settle a channel edit'));
  }
}
