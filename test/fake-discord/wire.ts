import { createHmac } from 'node:crypto';
import { DEFAULT_MEMBER_PERMISSIONS } from './constants.js';
import type { JsonObject } from './json.js';
import type { ChannelState, FakeState } from './state.js';

/** Discord's wire objects (channel, member, guild, application, message) built from the fake's state. */

export function channelJson(s: FakeState, c: ChannelState, withGuildId: boolean): JsonObject {
  if (c.type === 1) {
    const recipient = c.recipientId ? s.users.get(c.recipientId)?.user : undefined;
    return { id: c.id, type: 1, last_message_id: null, flags: 0, recipients: recipient ? [recipient] : [] };
  }
  if (c.type === 3) {
    // A group DM: its users (the bot user is never one of them).
    const ids = (c.recipientId ?? '').split(',');
    const recipients: JsonObject[] = ids.flatMap((id) => {
      const u = s.users.get(id);
      return u ? [u.user] : [];
    });
    const owner = ids[0] ?? null;
    return {
      id: c.id,
      type: 3,
      name: null,
      icon: null,
      owner_id: owner,
      last_message_id: null,
      flags: 0,
      recipients,
    };
  }
  const out: JsonObject = {
    id: c.id,
    type: c.type,
    name: c.name,
    position: c.position,
    parent_id: c.parentId,
    flags: 0,
    // A channel the bot may not send in says so as Discord would: an overwrite denying it Send Messages.
    permission_overwrites: c.botCanSend
      ? []
      : [{ id: s.applicationId, type: 1, allow: '0', deny: String(1n << 11n) }],
  };
  if (withGuildId && c.guildId !== null) out['guild_id'] = c.guildId;
  if (c.type === 0 || c.type === 5) {
    Object.assign(out, { topic: c.topic, nsfw: false, last_message_id: null, rate_limit_per_user: 0 });
  }
  if (c.type === 2) Object.assign(out, { bitrate: 64000, user_limit: 0, rtc_region: null, nsfw: false });
  out['flags'] = c.flags;
  if (c.type === 15 || c.type === 16) {
    Object.assign(out, {
      topic: c.topic,
      nsfw: false,
      last_message_id: lastThreadId(s, c.id),
      rate_limit_per_user: 0,
      available_tags: c.availableTags.map((t) => ({ ...t })),
      default_reaction_emoji: null,
      default_sort_order: null,
      default_auto_archive_duration: 4320,
      default_thread_rate_limit_per_user: 0,
    });
    if (c.type === 15) out['default_forum_layout'] = 0;
  }
  if (c.type === 10 || c.type === 11 || c.type === 12) {
    delete out['permission_overwrites'];
    delete out['position'];
    const messages = [...s.messages.values()].filter((m) => m.channelId === c.id && !m.deleted).length;
    const parentType = c.parentId ? s.channels.get(c.parentId)?.type : undefined;
    // A forum post's starter message does not count in message_count.
    const starter = parentType === 15 || parentType === 16 ? 1 : 0;
    Object.assign(out, {
      owner_id: c.ownerId ?? s.applicationId,
      last_message_id: null,
      rate_limit_per_user: 0,
      message_count: Math.max(0, messages - starter),
      member_count: 1,
      total_message_sent: Math.max(0, messages - starter),
      thread_metadata: {
        archived: c.archived,
        auto_archive_duration: c.autoArchiveDuration,
        archive_timestamp: new Date(c.archiveTimestamp).toISOString(),
        locked: c.locked,
      },
    });
    if (parentType === 15 || parentType === 16) out['applied_tags'] = [...c.appliedTags];
  }
  return out;
}

/** A guild member object; throws for a user who is not in the guild (a test set-up mistake). */
/** A forum's newest post id (Discord: `last_message_id` of a forum names its last thread). */
function lastThreadId(s: FakeState, forumId: string): string | null {
  let last: string | null = null;
  for (const c of s.channels.values())
    if (c.parentId === forumId && (last === null || BigInt(c.id) > BigInt(last))) last = c.id;
  return last;
}

export function memberJson(
  s: FakeState,
  guildId: string,
  userId: string,
  withPermissions: boolean,
): JsonObject {
  const m = s.member(guildId, userId);
  if (!m)
    throw new Error(`fake-discord: user ${userId} is not a member of guild ${guildId} (addMember first)`);
  const out: JsonObject = {
    user: s.user(userId).user,
    roles: m.roles,
    joined_at: m.joinedAt,
    deaf: false,
    mute: false,
    flags: 0,
    pending: false,
    nick: null,
    avatar: null,
    banner: null,
    premium_since: null,
    communication_disabled_until: null,
    unusual_dm_activity_until: null,
  };
  if (withPermissions) out['permissions'] = m.permissions;
  return out;
}

export function guildCreatePayload(s: FakeState, guildId: string): JsonObject {
  const g = s.guild(guildId);
  const bot = s.member(guildId, s.applicationId);
  return {
    id: g.id,
    name: g.name,
    icon: null,
    splash: null,
    discovery_splash: null,
    banner: null,
    description: null,
    owner_id: g.ownerId,
    region: 'deprecated',
    afk_channel_id: null,
    afk_timeout: 300,
    widget_enabled: false,
    widget_channel_id: null,
    max_presences: null,
    nsfw: false,
    verification_level: 1,
    default_message_notifications: 1,
    explicit_content_filter: 2,
    features: [],
    mfa_level: 0,
    application_id: null,
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    public_updates_channel_id: null,
    safety_alerts_channel_id: null,
    vanity_url_code: null,
    premium_tier: g.premiumTier,
    premium_subscription_count: g.premiumTier * 7,
    premium_progress_bar_enabled: false,
    preferred_locale: g.locale,
    nsfw_level: 0,
    max_members: 500000,
    max_video_channel_users: 25,
    max_stage_video_channel_users: 50,
    incidents_data: null,
    latest_onboarding_question_id: null,
    hub_type: null,
    home_header: null,
    inventory_settings: null,
    version: 0,
    lazy: true,
    large: false,
    unavailable: false,
    member_count: g.members.size,
    joined_at: bot?.joinedAt ?? null,
    roles: [
      {
        id: g.id,
        name: '@everyone',
        description: null,
        permissions: DEFAULT_MEMBER_PERMISSIONS,
        position: 0,
        color: 0,
        colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
        hoist: false,
        managed: false,
        mentionable: false,
        icon: null,
        unicode_emoji: null,
        flags: 0,
      },
    ],
    emojis: [],
    stickers: [],
    channels: [...s.channels.values()].filter((c) => c.guildId === g.id).map((c) => channelJson(s, c, false)),
    threads: [],
    members: [memberJson(s, g.id, s.applicationId, false)],
    presences: [],
    voice_states: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    embedded_activities: [],
    activity_instances: [],
  };
}

export function applicationJson(s: FakeState): JsonObject {
  const owner = s.user(s.defaultUserId).user;
  return {
    id: s.applicationId,
    name: String(s.botUser['username']),
    icon: null,
    description: '',
    summary: '',
    type: null,
    is_monetized: false,
    is_verified: false,
    is_discoverable: false,
    hook: true,
    bot_public: true,
    bot_require_code_grant: false,
    verify_key: createHmac('sha256', s.cdnSecret).update('verify').digest('hex'),
    flags: 0,
    flags_new: '0',
    eligible_oauth2_scopes: [],
    owner,
    team: null,
    bot: s.botUser,
    approximate_guild_count: s.guilds.size,
    approximate_user_install_count: 0,
    approximate_user_authorization_count: 0,
    redirect_uris: [],
    interactions_endpoint_url: null,
    role_connections_verification_url: null,
    event_webhooks_url: null,
    event_webhooks_status: 1,
    integration_types_config: { '0': {} },
    explicit_content_filter: 0,
    storefront_available: false,
  };
}

export function baseMessage(
  s: FakeState,
  id: string,
  channelId: string,
  author: JsonObject,
  type: number,
  flags: number,
): JsonObject {
  return {
    type,
    content: '',
    mentions: [],
    mention_roles: [],
    attachments: [],
    embeds: [],
    timestamp: new Date(s.clock.now()).toISOString(),
    edited_timestamp: null,
    flags,
    components: [],
    id,
    channel_id: channelId,
    author,
    pinned: false,
    mention_everyone: false,
    tts: false,
  };
}
