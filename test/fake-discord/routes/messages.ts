import { NONCE_WINDOW_MS, uploadLimitForTier } from '../constants.js';
import { DiscordHttpError, err } from '../errors.js';
import { isRecord, type JsonObject } from '../json.js';
import {
  applyMessageBody,
  checkOldMessageEdit,
  deleteMessage,
  editMessage,
  emitMessage,
} from '../message-ops.js';
import { checkMessageRules } from '../message-rules.js';
import { FakeMessage, MessageFlag } from '../messages.js';
import { checkThreadWritable } from '../thread-state.js';
import { bodyObject, type HandlerContext, type Router } from '../router.js';
import type { ChannelState, FakeState } from '../state.js';
import { baseMessage } from '../wire.js';
import { resolveAttachment } from '../attachments.js';
import type { AttachmentRef } from '../types.js';

/** Messages family: `/channels/{channel_id}/messages[/{message_id}]` (list, create, get, edit, delete). */

/** The channel of a channel route, with the bot's access to it (50001 cannot see, 50013 cannot send). */
export function channelFor(s: FakeState, ctx: HandlerContext, needSend: boolean): ChannelState {
  const channel = s.channels.get(ctx.params['channel_id'] ?? '');
  if (!channel) throw err.unknownChannel();
  if (!channel.botCanView) throw err.missingAccess();
  if (needSend && !channel.botCanSend) throw err.missingPermissions();
  return channel;
}

/** The message of a `/channels/{channel_id}/messages/{message_id}` route (ephemeral ones are not reachable). */
export function channelMessage(s: FakeState, ctx: HandlerContext): FakeMessage {
  const msg = s.messages.get(ctx.params['message_id'] ?? '');
  if (!msg || msg.deleted || msg.ephemeral || msg.channelId !== ctx.params['channel_id'])
    throw err.unknownMessage();
  return msg;
}

/** Messages in a channel (oldest first), excluding deleted unless asked. */
export function channelMessages(s: FakeState, channelId: string, includeDeleted: boolean): FakeMessage[] {
  return [...s.messages.values()].filter((m) => m.channelId === channelId && (includeDeleted || !m.deleted));
}

/** A reply's `message_reference` (no guild_id in DMs). */
export function messageReference(s: FakeState, channelId: string, messageId: string): JsonObject {
  const out: JsonObject = { type: 0, channel_id: channelId, message_id: messageId };
  const guildId = s.guildOf(channelId);
  if (guildId !== null) out['guild_id'] = guildId;
  return out;
}

export function registerMessageRoutes(r: Router, s: FakeState): void {
  r.add('GET', '/channels/{channel_id}/messages', 'bot', (ctx) => {
    const channel = channelFor(s, ctx, false);
    const limit = Math.min(100, Math.max(1, Number(ctx.query.get('limit') ?? 50) || 50));
    let list = channelMessages(s, channel.id, false).filter((m) => !m.ephemeral);
    // discord-api-docs #8611: listing a channel holding a message with a Container (type 17)
    // answers 500, whatever the page; fetching one message works.
    if (s.containerListBug && list.some((m) => m.components.some((c) => c['type'] === 17)))
      throw new DiscordHttpError(500, 0, '500: Internal Server Error');
    const before = ctx.query.get('before');
    const after = ctx.query.get('after');
    const around = ctx.query.get('around');
    const cmp = (a: string, b: string): number =>
      BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0;
    list.sort((a, b) => cmp(b.id, a.id)); // newest first
    if (before) list = list.filter((m) => cmp(m.id, before) < 0);
    if (after) list = list.filter((m) => cmp(m.id, after) > 0).slice(-limit);
    if (around) {
      const i = list.findIndex((m) => m.id === around);
      const half = Math.floor(limit / 2);
      list = i < 0 ? [] : list.slice(Math.max(0, i - half), i + half + 1);
    }
    return { status: 200, body: list.slice(0, limit).map((m) => m.data) };
  });

  r.add('POST', '/channels/{channel_id}/messages', 'bot', (ctx) => {
    const channel = channelFor(s, ctx, true);
    if (channel.type === 4 || channel.type === 15 || channel.type === 16)
      throw new DiscordHttpError(400, 50008, 'Cannot send messages in a non-text channel');
    checkThreadWritable(s, channel, 'send');
    // A member whose DMs are closed to the bot: Discord opens the channel, refuses the message.
    if (channel.type === 1 && channel.recipientId !== null && s.dmsClosed.has(channel.recipientId))
      throw new DiscordHttpError(403, 50007, 'Cannot send messages to this user');
    const limit = uploadLimitForTier(channel.guildId === null ? 0 : s.guild(channel.guildId).premiumTier);
    if (ctx.files.some((f) => f.bytes.length > limit)) {
      throw new DiscordHttpError(413, 40005, 'Request entity too large');
    }
    const body = bodyObject(ctx);
    // enforce_nonce: the same author's message with the same nonce within the window is
    // answered again, and nothing new is created.
    const nonce = body['nonce'];
    const nonceKey =
      body['enforce_nonce'] === true && (typeof nonce === 'string' || typeof nonce === 'number')
        ? `${String(s.botUser['id'])}:${String(nonce)}`
        : undefined;
    if (nonceKey !== undefined) {
      for (const [k, v] of s.nonces) if (s.clock.now() - v.at >= NONCE_WINDOW_MS) s.nonces.delete(k);
      const seen = s.nonces.get(nonceKey);
      const earlier = seen && s.messages.get(seen.messageId);
      if (earlier) return { status: 200, body: earlier.data };
    }
    if (typeof body['flags'] === 'number' && (body['flags'] & MessageFlag.Ephemeral) !== 0) {
      body['flags'] = body['flags'] & ~MessageFlag.Ephemeral; // Discord ignores EPHEMERAL outside interactions
    }
    const id = s.snowflakes.next();
    const base = baseMessage(s, id, channel.id, s.botUser, 0, 0);
    const reference = body['message_reference'];
    if (isRecord(reference) && typeof reference['message_id'] === 'string') {
      base['type'] = 19;
      base['message_reference'] = messageReference(s, channel.id, reference['message_id']);
    }
    const data = applyMessageBody(s, base, body, ctx.files, 'create', channel.id, false);
    if (typeof body['nonce'] === 'string' || typeof body['nonce'] === 'number') data['nonce'] = body['nonce'];
    checkMessageRules(s, data, ctx, { body });
    const msg = new FakeMessage({
      id,
      channelId: channel.id,
      data,
      ephemeral: false,
      createdAt: s.clock.now(),
      interactionId: null,
      source: 'channel',
    });
    s.messages.set(id, msg);
    if (nonceKey !== undefined) s.nonces.set(nonceKey, { messageId: id, at: s.clock.now() });
    emitMessage(s, 'MESSAGE_CREATE', msg);
    return { status: 200, body: data };
  });

  r.add('GET', '/channels/{channel_id}/messages/{message_id}', 'bot', (ctx) => {
    channelFor(s, ctx, false);
    return { status: 200, body: channelMessage(s, ctx).data };
  });

  r.add('PATCH', '/channels/{channel_id}/messages/{message_id}', 'bot', (ctx) => {
    checkThreadWritable(s, channelFor(s, ctx, false), 'edit');
    const msg = channelMessage(s, ctx);
    if (msg.authorId !== s.applicationId) throw err.cannotEditOthers();
    const body = bodyObject(ctx);
    checkOldMessageEdit(s, msg);
    return { status: 200, body: editMessage(s, msg, ctx, body, 'channel') };
  });

  r.add('DELETE', '/channels/{channel_id}/messages/{message_id}', 'bot', (ctx) => {
    checkThreadWritable(s, channelFor(s, ctx, false), 'edit');
    deleteMessage(s, channelMessage(s, ctx));
    return { status: 204 };
  });
}

/** Simulates a user posting in a channel (MESSAGE_CREATE is dispatched if the bot has GUILD_MESSAGES). */
export interface UserMessageInput {
  content: string;
  channelId?: string;
  userId?: string;
  /** Files posted with it (registered as the channel's attachments, in order). */
  attachments?: AttachmentRef[];
  /** Embeds as Discord shows them (e.g. `{ type: 'image', url, thumbnail: { url } }` for a posted image link). */
  embeds?: JsonObject[];
}

export function postUserMessage(s: FakeState, input: UserMessageInput): FakeMessage {
  const channelId = input.channelId ?? s.defaultChannelId;
  const user = s.user(input.userId ?? s.defaultUserId);
  const id = s.snowflakes.next();
  const msg = new FakeMessage({
    id,
    channelId,
    ephemeral: false,
    createdAt: s.clock.now(),
    interactionId: null,
    source: 'user',
    data: baseMessage(s, id, channelId, user.user, 0, 0),
  });
  msg.data['content'] = input.content;
  if (input.attachments)
    // A member's own upload is a lasting attachment (not an interaction's ephemeral one).
    msg.data['attachments'] = input.attachments.map((ref) =>
      resolveAttachment(s, typeof ref === 'string' ? ref : { ephemeral: false, ...ref }, channelId),
    );
  if (input.embeds) msg.data['embeds'] = input.embeds.map((e) => ({ ...e }));
  s.messages.set(id, msg);
  emitMessage(s, 'MESSAGE_CREATE', msg);
  s.changed();
  return msg;
}
