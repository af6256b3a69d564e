import { err } from '../errors.js';
import type { HandlerContext, Router } from '../router.js';
import type { FakeState } from '../state.js';
import { channelJson, guildCreatePayload, memberJson } from '../wire.js';
import { channelFor } from './messages.js';

/** Channels and threads family (threads: routes/threads.ts): the guild, its channels and members, channel GET, typing. */

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
}
