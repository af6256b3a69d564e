import { DiscordAPIError, REST } from '@discordjs/rest';
import { Routes } from 'discord-api-types/v10';
import { z } from 'zod';
import { oncePerJob } from './message-nonce.js';
import { editBody, type MessagePayload } from './render/limits.js';
import type { PostedMessage } from '../shared/message-ref.js';

export type { MessagePayload };

/** Discord's numeric JSON error code of what @discordjs/rest threw, if it is one. */
export function discordCode(err: unknown): number | undefined {
  return err instanceof DiscordAPIError && typeof err.code === 'number' ? err.code : undefined;
}

/** AutoMod blocked the message (200000) or a thread name / title (200001). */
export const AUTOMOD_CODES: ReadonlySet<number> = new Set([200000, 200001]);

/** Discord refused text because of the server's AutoMod rules (a message or a thread name). */
export function isAutoModRefusal(err: unknown): boolean {
  const code = discordCode(err);
  return code !== undefined && AUTOMOD_CODES.has(code);
}

/** Unknown Channel (10003) or Unknown Message (10008): what was to be changed is already gone. */
export function isGoneOnDiscord(err: unknown): boolean {
  const code = discordCode(err);
  return code === 10003 || code === 10008;
}

/**
 * The two ways the bot edits a job's live message. Errors are the ones
 * @discordjs/rest throws (DiscordAPIError, HTTPError, RateLimitError, network
 * errors); the edit queue classifies them.
 */
export interface DiscordTransport {
  /**
   * PATCH /webhooks/{app}/{token}/messages/{messageId} (default `@original`, else a
   * follow-up of that interaction) — no bot token, budgeted per interaction.
   */
  editInteractionOriginal(
    applicationId: string,
    token: string,
    body: MessagePayload,
    messageId?: string,
  ): Promise<void>;
  /** PATCH /channels/{c}/messages/{m} — bot token, one budget per channel. */
  editChannelMessage(channelId: string, messageId: string, body: MessagePayload): Promise<void>;
  /**
   * A new message to a member (a personal job's final): `POST /users/@me/channels`
   * `{recipient_id}`, then `POST /channels/{dm}/messages` — bot token. 50007 when the
   * member's DMs are closed to the bot. Once per job (an enforced nonce from `jobId`): a
   * retry after a lost answer, or the keeper showing the final again, sends no second DM.
   */
  sendDirectMessage(userId: string, body: MessagePayload, jobId: string): Promise<PostedMessage>;
}

/** What the bot reads of a created channel or message. */
const withId = z.object({ id: z.string() });

/**
 * Interaction-webhook edits go through their own REST instance on purpose.
 *
 * In @discordjs/rest 2.x every request handled by a SequentialHandler (all
 * routes except `/interactions/:id/:token/callback`, which uses the
 * BurstHandler) decrements the instance-wide `globalRemaining` counter — also
 * requests sent with `auth: false`. Discord itself does not count interaction
 * endpoints against the bot's global 50/s limit, so sharing the bot's REST
 * would make a storm of channel edits (or anything else the bot does) delay
 * interaction edits that Discord would have accepted at once.
 * `interactionRest` therefore has its global limiter off and carries no bot
 * token (interaction webhooks never need one, so it is never sent to them).
 */
export function createRestTransport(deps: { botRest: REST; interactionRest: REST }): DiscordTransport {
  return {
    async editInteractionOriginal(applicationId, token, body, messageId = '@original') {
      // A card's edit clears the classic fields (see editBody): the same body on both routes.
      await deps.interactionRest.patch(Routes.webhookMessage(applicationId, token, messageId), {
        body: editBody(body),
        auth: false,
      });
    },
    async editChannelMessage(channelId, messageId, body) {
      await deps.botRest.patch(Routes.channelMessage(channelId, messageId), { body: editBody(body) });
    },
    async sendDirectMessage(userId, body, jobId) {
      const dm = withId.parse(
        await deps.botRest.post(Routes.userChannels(), { body: { recipient_id: userId } }),
      );
      const msg = withId.parse(
        await deps.botRest.post(Routes.channelMessages(dm.id), {
          body: { ...body, ...oncePerJob('dm', jobId) },
        }),
      );
      return { channelId: dm.id, messageId: msg.id };
    },
  };
}

/**
 * REST instance for interaction-webhook edits (see createRestTransport).
 * - `globalRequestsPerSecond: Infinity`: the local global limiter never blocks
 *   (a real global 429 from Discord, flagged X-RateLimit-Global, is still honoured).
 * - `rejectOnRateLimit: () => true`: a 429 (or a locally known exhausted bucket)
 *   is thrown as RateLimitError instead of sleeping inside REST with a stale
 *   payload; the edit queue waits `retryAfter` and then sends the latest state.
 * - `retries: 0`: 5xx/timeouts come straight back so the queue backs off with
 *   jitter and retries the latest state rather than the old one.
 * Per-interaction buckets still work: the route's major parameter is
 * `{applicationId}/{token}` when applicationId is a snowflake.
 */
export function createInteractionRest(opts: { api: string; timeoutMs?: number }): REST {
  return new REST({
    api: opts.api,
    globalRequestsPerSecond: Number.POSITIVE_INFINITY,
    rejectOnRateLimit: () => true,
    retries: 0,
    ...(opts.timeoutMs !== undefined ? { timeout: opts.timeoutMs } : {}),
  });
}
