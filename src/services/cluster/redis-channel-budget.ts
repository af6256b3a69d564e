import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChannelBudget, EditKind, MemoryChannelBudgetOptions } from '../discord/edits/channel-budget.js';
import type { RedisClient } from '../store/backend.js';

/**
 * The bot-token edit budget of each channel, shared by every instance on one
 * Redis: the same rules as MemoryChannelBudget (a slot counts from its grant until
 * windowMs after Discord answered, progress leaves `finalReserve` slots for
 * finals, a 429 blocks the channel), kept in Redis and decided by one Lua script
 * per request on Redis's clock (TIME), so instances never disagree on time.
 *
 * The scripts are ./../store/lua/channel-budget-*.lua.
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
      await this.deps.redis.run('channelBudgetAcquire', this.keys(channelId), [
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
      .run('channelBudgetBlock', [key], [String(ms)])
      .catch((err: unknown) => this.deps.logger.warn({ err, channelId }, 'could not share a rate limit'));
  }

  private finish(channelId: string, counted: boolean): void {
    const list = this.grants.get(channelId);
    const grant = list?.shift();
    if (list && list.length === 0) this.grants.delete(channelId);
    if (grant === undefined) return;
    const [open, done] = this.keys(channelId);
    this.deps.redis
      .run(
        'channelBudgetSettle',
        [open ?? '', done ?? ''],
        [grant, counted ? '1' : '0', String(this.deps.windowMs)],
      )
      .catch((err: unknown) => this.deps.logger.warn({ err, channelId }, 'could not settle a channel edit'));
  }
}
