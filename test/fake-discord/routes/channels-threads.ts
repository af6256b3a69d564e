import { DiscordHttpError, err } from '../errors.js';
import { bodyObject, type HandlerContext, type Router } from '../router.js';
import type { ChannelState, FakeState } from '../state.js';
import { channelJson, guildCreatePayload, memberJson } from '../wire.js';
import { channelFor, channelMessage } from './messages.js';

/** Channels and threads family: the guild, its channels and members, channel GET, typing, threads. */

/** The guild of a `/guilds/{guild_id}` route: one the bot is in, else 10004. */
function knownGuild(s: FakeState, ctx: HandlerContext): string {
  const id = ctx.params['guild_id'] ?? '';
  if (!s.guilds.has(id)) throw err.unknownGuild();
  return id;
}

export function registerChannelRoutes(r: Router, s: FakeState): void {
  r.add('GET', '/guilds/{guild_id}', 'bot', (ctx) => {
    const g = guildCreatePayload(s, knownGuild(s, ctx));
    for (const k of [
      'channels',
      'threads',
      'members',
      'presences',
      'voice_states',
      'stage_instances',
      'guild_scheduled_events',
      'soundboard_sounds',
      'embedded_activities',
      'activity_instances',
      'joined_at',
      'large',
      'lazy',
      'member_count',
      'unavailable',
    ]) {
      delete g[k];
    }
    return { status: 200, body: g };
  });
  r.add('GET', '/guilds/{guild_id}/channels', 'bot', (ctx) => {
    const guildId = knownGuild(s, ctx);
    const list = [...s.channels.values()].filter((c) => c.guildId === guildId);
    return { status: 200, body: list.map((c) => channelJson(s, c, true)) };
  });
  r.add('GET', '/guilds/{guild_id}/members/{user_id}', 'bot', (ctx) => {
    const guildId = knownGuild(s, ctx);
    const userId = ctx.params['user_id'] ?? '';
    if (!s.member(guildId, userId)) throw err.unknownMember();
    return { status: 200, body: memberJson(s, guildId, userId, false) };
  });
  r.add('GET', '/channels/{channel_id}', 'bot', (ctx) => ({
    status: 200,
    body: channelJson(s, channelFor(s, ctx, false), true),
  }));
  r.add('POST', '/channels/{channel_id}/typing', 'bot', (ctx) => {
    channelFor(s, ctx, true);
    return { status: 204 };
  });

  // Start a public thread from a message (Discord: the thread's id is the message's id; one thread per
  // message, 160004; text or announcement channels only, 50024; Create Public Threads, else 50013).
  r.add('POST', '/channels/{channel_id}/messages/{message_id}/threads', 'bot', (ctx) => {
    const channel = channelFor(s, ctx, true);
    if (channel.type !== 0 && channel.type !== 5) {
      throw new DiscordHttpError(400, 50024, 'Cannot execute action on this channel type');
    }
    const msg = channelMessage(s, ctx);
    if (s.channels.has(msg.id)) {
      throw new DiscordHttpError(400, 160004, 'A thread has already been created for this message');
    }
    const body = bodyObject(ctx);
    const name = typeof body['name'] === 'string' ? body['name'] : '';
    const thread: ChannelState = {
      id: msg.id,
      name,
      type: channel.type === 5 ? 10 : 11,
      topic: null,
      parentId: channel.id,
      position: 0,
      botCanView: true,
      botCanSend: channel.botCanSend,
      guildId: channel.guildId,
      recipientId: null,
    };
    s.channels.set(thread.id, thread);
    const json = channelJson(s, thread, true);
    msg.data['thread'] = json;
    if (s.gateway.currentSession) s.gateway.dispatch('THREAD_CREATE', { ...json, newly_created: true });
    return { status: 201, body: json };
  });
}
