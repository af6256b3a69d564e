import { createHash } from 'node:crypto';

export interface WindowLimit {
  limit: number;
  windowMs: number;
}

export interface RateLimitConfig {
  /** POST + PATCH `/channels/{channel_id}/messages[/{message_id}]`, one shared bucket per channel. Discord: 5 / 5 s. */
  channelMessages: WindowLimit;
  /** PATCH `/webhooks/{app}/{token}/messages/*` (interaction edits), per token. Discord: 5 / 5 s. */
  webhookMessageEdits: WindowLimit;
  /** POST `/webhooks/{app}/{token}` (follow-ups), per token. */
  webhookExecute: WindowLimit;
  /** Every other bot-token route, per method + route + major parameter. */
  defaultRoute: WindowLimit;
  /** Global limit for requests authenticated with the bot token (interaction routes are exempt). Discord: 50 / s. */
  globalPerSecond: number;
}

export const DEFAULT_RATE_LIMITS: RateLimitConfig = {
  channelMessages: { limit: 5, windowMs: 5_000 },
  webhookMessageEdits: { limit: 5, windowMs: 5_000 },
  webhookExecute: { limit: 5, windowMs: 5_000 },
  defaultRoute: { limit: 50, windowMs: 1_000 },
  globalPerSecond: 50,
};

export interface RateLimitRequest {
  method: string;
  template: string;
  params: Record<string, string>;
  botAuth: boolean;
}

export interface RateLimitVerdict {
  headers: Record<string, string>;
  limited: null | {
    retryAfterMs: number;
    global: boolean;
    scope: 'user' | 'global' | 'shared';
    bucket: string;
  };
}

interface BucketState {
  remaining: number;
  resetAt: number;
}

function hashOf(name: string): string {
  return createHash('md5').update(`fake-discord:${name}`).digest('hex');
}

export function isInteractionRoute(template: string): boolean {
  return (
    template.startsWith('/interactions/') || template.startsWith('/webhooks/{webhook_id}/{webhook_token}')
  );
}

const seconds = (ms: number): string => (Math.max(0, ms) / 1000).toFixed(3);

export class RateLimiter {
  enabled: boolean;
  config: RateLimitConfig;
  readonly #buckets = new Map<string, BucketState>();
  #global: BucketState = { remaining: 0, resetAt: 0 };
  readonly #now: () => number;

  constructor(enabled: boolean, config: RateLimitConfig, now: () => number = () => Date.now()) {
    this.enabled = enabled;
    this.config = config;
    this.#now = now;
  }

  reset(): void {
    this.#buckets.clear();
    this.#global = { remaining: 0, resetAt: 0 };
  }

  #rule(req: RateLimitRequest): { name: string; major: string; limit: WindowLimit } | null {
    const { method, template, params } = req;
    if (template.startsWith('/interactions/')) return null; // callbacks: no bucket (discord.js uses its BurstHandler)
    if (
      (method === 'POST' && template === '/channels/{channel_id}/messages') ||
      (method === 'PATCH' && template === '/channels/{channel_id}/messages/{message_id}')
    ) {
      return {
        name: 'channel-messages',
        major: params['channel_id'] ?? '',
        limit: this.config.channelMessages,
      };
    }
    if (template.startsWith('/webhooks/{webhook_id}/{webhook_token}')) {
      const major = `${params['webhook_id'] ?? ''}/${params['webhook_token'] ?? ''}`;
      if (method === 'PATCH' && template.includes('/messages/')) {
        return { name: 'webhook-message-edit', major, limit: this.config.webhookMessageEdits };
      }
      if (method === 'POST' && template === '/webhooks/{webhook_id}/{webhook_token}') {
        return { name: 'webhook-execute', major, limit: this.config.webhookExecute };
      }
      return null;
    }
    if (!req.botAuth) return null;
    const major = params['channel_id'] ?? params['guild_id'] ?? params['webhook_id'] ?? 'global';
    return { name: `${method} ${template}`, major, limit: this.config.defaultRoute };
  }

  /** Consumes one request from the global and route buckets; returns headers + whether it must be refused. */
  check(req: RateLimitRequest): RateLimitVerdict {
    if (!this.enabled) return { headers: {}, limited: null };
    const now = this.#now();

    if (req.botAuth && !isInteractionRoute(req.template)) {
      if (now >= this.#global.resetAt)
        this.#global = { remaining: this.config.globalPerSecond, resetAt: now + 1000 };
      if (this.#global.remaining <= 0) {
        const retryAfterMs = this.#global.resetAt - now;
        return {
          headers: {
            'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
            'X-RateLimit-Global': 'true',
            'X-RateLimit-Scope': 'global',
          },
          limited: { retryAfterMs, global: true, scope: 'global', bucket: 'global' },
        };
      }
      this.#global.remaining -= 1;
    }

    const rule = this.#rule(req);
    if (!rule) return { headers: {}, limited: null };
    const hash = hashOf(rule.name);
    const key = `${hash}:${rule.major}`;
    let state = this.#buckets.get(key);
    if (!state || now >= state.resetAt) {
      state = { remaining: rule.limit.limit, resetAt: now + rule.limit.windowMs };
      this.#buckets.set(key, state);
    }
    const baseHeaders = (remaining: number): Record<string, string> => ({
      'X-RateLimit-Limit': String(rule.limit.limit),
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': seconds(state.resetAt),
      'X-RateLimit-Reset-After': seconds(state.resetAt - now),
      'X-RateLimit-Bucket': hash,
    });
    if (state.remaining <= 0) {
      const retryAfterMs = state.resetAt - now;
      return {
        headers: {
          ...baseHeaders(0),
          // Discord rounds the header up to whole seconds; the JSON body carries the precise float.
          'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
          'X-RateLimit-Scope': 'user',
        },
        limited: { retryAfterMs, global: false, scope: 'user', bucket: hash },
      };
    }
    state.remaining -= 1;
    return { headers: baseHeaders(state.remaining), limited: null };
  }
}
