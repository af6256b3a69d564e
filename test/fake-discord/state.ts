import { randomBytes } from 'node:crypto';
import type { AutoModBlock } from './automod.js';
import { ChangeFeed } from './changes.js';
import { OffsetClock } from './clock.js';
import { DEFAULT_BOT_PERMISSIONS, DEFAULT_MEMBER_PERMISSIONS } from './constants.js';
import { FakeGateway, GatewayIntent } from './gateway.js';
import { InteractionSigner, type HttpDelivery } from './http-interactions.js';
import type { Json, JsonObject } from './json.js';
import type { FakeMessage } from './messages.js';
import type { OpenApiSpec } from './openapi.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimitConfig } from './ratelimit.js';
import { gatewayHooks } from './routes/gateway.js';
import { SnowflakeGenerator } from './snowflake.js';
import { channelJson, guildCreatePayload } from './wire.js';
import type {
  FakeDiscordOptions,
  FakeGuildOptions,
  ForumChannelOptions,
  FakeUserOptions,
  InteractionCallbackRecord,
  RateLimitHit,
  RequestRecord,
  ResponseViolation,
  SpecQuirkRecord,
  StoredAttachment,
  ValidationMode,
  Violation,
} from './types.js';

export interface ChannelState {
  id: string;
  name: string;
  type: number;
  topic: string | null;
  parentId: string | null;
  position: number;
  botCanView: boolean;
  botCanSend: boolean;
  /** The guild the channel is in; null for a DM channel. */
  guildId: string | null;
  /** DM channels: the user the bot talks to. */
  recipientId: string | null;
  /** Channel flags: PINNED (1 << 1) on a forum post, REQUIRE_TAG (1 << 4) on a forum or media channel. */
  flags: number;
  /** Forum and media channels: the tags a post may carry. */
  availableTags: ForumTag[];
  /** Threads: who started it, its tags (forum posts) and its state. */
  ownerId: string | null;
  appliedTags: string[];
  archived: boolean;
  locked: boolean;
  /** Fake-clock time the thread was archived or unarchived (created). */
  archiveTimestamp: number;
  autoArchiveDuration: number;
  /** Fake-clock time the channel was deleted; deleted channels live in `deletedChannels`. */
  deletedAt: number | null;
  /** Changes made with PATCH /channels/{id}, in order. */
  updates: Array<{ at: number; changes: JsonObject }>;
}

export const ChannelFlag = { Pinned: 1 << 1, RequireTag: 1 << 4 } as const;

export interface ForumTag {
  id: string;
  name: string;
  moderated: boolean;
  emoji_id: string | null;
  emoji_name: string | null;
}

/** The fields every new channel starts with (a text channel in no guild, until said otherwise). */
export function channelDefaults(s: { clock: { now(): number } }): Omit<ChannelState, 'id' | 'name' | 'type'> {
  return {
    topic: null,
    parentId: null,
    position: 0,
    botCanView: true,
    botCanSend: true,
    guildId: null,
    recipientId: null,
    flags: 0,
    availableTags: [],
    ownerId: null,
    appliedTags: [],
    archived: false,
    locked: false,
    archiveTimestamp: s.clock.now(),
    autoArchiveDuration: 1440,
    deletedAt: null,
    updates: [],
  };
}

export interface UserState {
  user: JsonObject;
}

/** A user's membership of one guild. */
export interface MemberState {
  permissions: string;
  roles: string[];
  joinedAt: string;
}

export interface GuildState {
  id: string;
  name: string;
  /** Preferred locale (the interaction's `guild_locale`). */
  locale: string;
  ownerId: string;
  /** Boost level: sets the upload limit per file. */
  premiumTier: number;
  members: Map<string, MemberState>;
  /** AutoMod keyword filter that blocks messages (`setAutoModKeywords`). */
  autoModKeywords: string[];
  /** The server installed the app (the bot is a member); false: reachable through user installs only. */
  botInstalled: boolean;
  /** Members may use external (user-installed) apps here; false: their answers are forced ephemeral. */
  externalApps: boolean;
}

export interface InteractionState {
  id: string;
  token: string;
  type: number;
  payload: JsonObject;
  createdAt: number;
  channelId: string;
  userId: string;
  callbacks: InteractionCallbackRecord[];
  /** Message the component/modal was on (component interactions). */
  sourceMessageId: string | null;
  originalMessageId: string | null;
  followUpIds: string[];
  /** Follow-up POSTs accepted (Discord caps them at 5 for a user install the server lacks). */
  followUpPosts: number;
  /** Brought only by the user's own install (no GUILD_INSTALL owner): follow-ups capped. */
  userInstallOnly: boolean;
  /** The server disallows external apps: every answer is ephemeral whatever its flags. */
  forceEphemeral: boolean;
  modal: JsonObject | undefined;
  choices: Json[] | undefined;
}

/**
 * Everything the fake Discord knows, shared by its route families (messages, interactions,
 * channels and threads, commands, gateway, CDN). The `FakeDiscord` facade exposes the
 * parts tests read; the route modules read and change it.
 */
export class FakeState {
  readonly options: FakeDiscordOptions;
  readonly host: string;
  port = 0;
  readonly clock: OffsetClock;
  readonly snowflakes: SnowflakeGenerator;
  readonly spec: OpenApiSpec;
  readonly validation: ValidationMode;
  readonly changes = new ChangeFeed();

  // --- identity
  readonly applicationId: string;
  readonly token: string;
  readonly botUser: JsonObject;
  /** The first guild (the one the options describe); more can be added with `addGuild`. */
  readonly guildId: string;
  readonly guilds = new Map<string, GuildState>();
  /** Secret of the CDN link signatures (`hm`). */
  readonly cdnSecret = randomBytes(16);

  // --- Discord's data
  readonly channels = new Map<string, ChannelState>();
  /** Deleted channels (threads, forum posts), for tests to look at. */
  readonly deletedChannels = new Map<string, ChannelState>();
  readonly users = new Map<string, UserState>();
  readonly defaultUserId: string;
  readonly messages = new Map<string, FakeMessage>();
  /** `enforce_nonce` messages by author and nonce, for NONCE_WINDOW_MS. */
  readonly nonces = new Map<string, { messageId: string; at: number }>();
  readonly attachments = new Map<string, StoredAttachment>();
  readonly interactions = new Map<string, InteractionState>();
  /**
   * A member's permissions in one channel where they differ from their server-wide ones
   * (what channel overwrites make of them), keyed `channelId:userId`; see setChannelPermissions.
   */
  readonly channelPermissions = new Map<string, string>();
  readonly commands: { global: JsonObject[]; guilds: Map<string, JsonObject[]> } = {
    global: [],
    guilds: new Map(),
  };
  /** Per-member command permission overrides a server admin set, by `guildId:commandId`. */
  readonly commandPermissions = new Map<string, Map<string, boolean>>();
  /** Edits of messages older than 1 h, per channel (30046 past the limit). */
  readonly oldMessageEdits = new Map<string, number>();

  // --- records (tests assert on these through the facade)
  readonly requests: RequestRecord[] = [];
  readonly violations: Violation[] = [];
  readonly unspecifiedRequests: Array<{
    method: string;
    path: string;
    route: string | null;
    handled: boolean;
  }> = [];
  readonly unhandledRequests: Array<{ method: string; path: string; inSpec: boolean }> = [];
  /** Bot-token requests to a server that never installed the app (refused 403 50001). */
  readonly outsiderRequests: Array<{ method: string; path: string; guildId: string }> = [];
  readonly specQuirks: SpecQuirkRecord[] = [];
  readonly responseViolations: ResponseViolation[] = [];
  readonly interactionResponses: InteractionCallbackRecord[] = [];
  readonly rateLimitHits: RateLimitHit[] = [];
  readonly concurrentEdits: Array<{ messageId: string; path: string; at: number }> = [];
  readonly editsInFlight = new Map<string, number>();
  readonly commandCalls: Record<string, number> = {};
  /** Messages and titles AutoMod blocked (200000 / 200001). */
  readonly autoModBlocks: AutoModBlock[] = [];
  /** Users whose DMs are closed to the bot (privacy settings, or they blocked it): 50007. */
  readonly dmsClosed = new Set<string>();
  readonly cdnRequests: Array<{ path: string; status: number; at: number }> = [];
  requestSeq = 0;

  // --- transport
  readonly gateway: FakeGateway;
  readonly rateLimiter: RateLimiter;
  readonly initialRateLimits: RateLimitConfig;
  readonly signer = new InteractionSigner();
  readonly httpDeliveries: HttpDelivery[] = [];
  interactionsMode: 'gateway' | 'http';
  /** discord-api-docs #8611: GET /channels/{id}/messages answers 500 when a message there has a Container. */
  containerListBug: boolean;
  interactionsUrl: string | undefined;

  constructor(options: FakeDiscordOptions, spec: OpenApiSpec) {
    this.options = options;
    this.host = options.host ?? '127.0.0.1';
    this.interactionsMode = options.interactions ?? 'gateway';
    this.interactionsUrl = options.interactionsUrl;
    this.containerListBug = options.containerListBug ?? true;
    this.clock = new OffsetClock(options.clock, options.startTime);
    this.snowflakes = new SnowflakeGenerator(() => this.clock.now());
    this.spec = spec;
    this.validation = options.validation ?? 'reject';
    this.applicationId = options.applicationId ?? this.snowflakes.next();
    this.token =
      options.token ??
      `${Buffer.from(this.applicationId).toString('base64url')}.${randomBytes(4).toString('base64url')}.${randomBytes(28).toString('base64url')}`;
    this.botUser = {
      id: this.applicationId,
      username: options.botUsername ?? 'FakeBot',
      discriminator: '1234',
      global_name: null,
      avatar: null,
      avatar_decoration_data: null,
      bot: true,
      public_flags: 0,
      flags: 0,
      banner: null,
      accent_color: null,
      collectibles: null,
      display_name_styles: null,
      primary_guild: null,
    };

    const rl = options.rateLimits;
    const rlConfig: RateLimitConfig =
      typeof rl === 'object' ? { ...DEFAULT_RATE_LIMITS, ...rl } : { ...DEFAULT_RATE_LIMITS };
    this.initialRateLimits = rlConfig;
    this.rateLimiter = new RateLimiter(rl === true || typeof rl === 'object', rlConfig);

    this.users.set(this.applicationId, { user: this.botUser });
    const guild = options.guild ?? {};
    this.guildId = this.#createGuild(guild);
    const users = options.users ?? [{ username: 'tester' }];
    let first: string | undefined;
    for (const u of users) {
      const id = this.addUser(u);
      first ??= id;
    }
    this.defaultUserId = first ?? this.addUser({ username: 'tester' });
    const main = this.guild(this.guildId);
    main.ownerId = guild.ownerId ?? this.defaultUserId;
    this.gateway = new FakeGateway(gatewayHooks(this));
  }

  /** A guild the bot is in, with its channels and the bot as a member. */
  #createGuild(options: FakeGuildOptions): string {
    const id = options.id ?? this.snowflakes.next();
    if (this.guilds.has(id)) throw new Error(`fake-discord: guild ${id} exists already`);
    this.guilds.set(id, {
      id,
      name: options.name ?? 'Fake Guild',
      locale: options.locale ?? 'en-US',
      ownerId: options.ownerId ?? '',
      premiumTier: 0,
      autoModKeywords: [],
      botInstalled: options.botInstalled ?? true,
      externalApps: options.externalApps ?? true,
      members: new Map(
        options.botInstalled === false
          ? []
          : [
              [
                this.applicationId,
                {
                  permissions: DEFAULT_BOT_PERMISSIONS,
                  roles: [],
                  joinedAt: new Date(this.clock.now() - 86_400_000).toISOString(),
                },
              ],
            ],
      ),
    });
    const channels = options.channels ?? [{ name: 'general' }];
    channels.forEach((c, position) => {
      const channelId = c.id ?? this.snowflakes.next();
      this.channels.set(channelId, {
        ...channelDefaults(this),
        id: channelId,
        name: c.name,
        type: c.type ?? 0,
        topic: c.topic ?? null,
        parentId: c.parentId ?? null,
        position,
        botCanView: options.botInstalled === false ? false : (c.botCanView ?? true),
        botCanSend: options.botInstalled === false ? false : (c.botCanSend ?? true),
        guildId: id,
      });
    });
    return id;
  }

  /** Adds a guild the bot is in (GUILD_CREATE is dispatched to a connected bot, as when it joins one). */
  addGuild(options: FakeGuildOptions & { ownerId?: string }): string {
    const id = this.#createGuild(options);
    this.guild(id).ownerId = options.ownerId ?? this.defaultUserId;
    if (
      this.guild(id).botInstalled &&
      this.gateway.currentSession &&
      this.gateway.hasIntent(GatewayIntent.Guilds)
    )
      this.gateway.dispatch('GUILD_CREATE', guildCreatePayload(this, id));
    this.changed();
    return id;
  }

  /** Something changed: re-check waits, tell listeners. */
  changed(): void {
    this.changes.changed();
  }

  get baseUrl(): string {
    return `http://${this.host}:${this.port}`;
  }

  get gatewayUrl(): string {
    return `ws://${this.host}:${this.port}`;
  }

  get defaultChannelId(): string {
    return this.defaultChannelOf(this.guildId);
  }

  /** The first text or announcement channel of a guild. */
  defaultChannelOf(guildId: string): string {
    for (const c of this.channels.values())
      if (c.guildId === guildId && (c.type === 0 || c.type === 5)) return c.id;
    throw new Error(`fake-discord: guild ${guildId} has no text channel`);
  }

  /** The guilds the bot is in (a server that never installed the app is not one). */
  installedGuildIds(): string[] {
    return [...this.guilds.values()].filter((g) => g.botInstalled).map((g) => g.id);
  }

  /**
   * The guild of a channel, thread or guild id the bot cannot reach because that server never
   * installed the app (its bot-token routes answer 50001), or `group-dm` for a group DM (the
   * bot user is in none), else undefined.
   */
  outsiderGuildOf(id: string): string | undefined {
    if (this.channels.get(id)?.type === 3) return 'group-dm';
    const guildId = this.guilds.has(id) ? id : (this.channels.get(id)?.guildId ?? null);
    if (guildId === null) return undefined;
    return this.guilds.get(guildId)?.botInstalled === false ? guildId : undefined;
  }

  /** A group DM of these users (type 3, no bot member: reachable through user installs only). */
  groupDmChannel(userIds: string[]): ChannelState {
    for (const c of this.channels.values()) if (c.type === 3 && c.recipientId === userIds.join(',')) return c;
    for (const u of userIds) this.user(u);
    const channel: ChannelState = {
      ...channelDefaults(this),
      id: this.snowflakes.next(),
      name: '',
      type: 3,
      recipientId: userIds.join(','),
      botCanView: false,
      botCanSend: false,
    };
    this.channels.set(channel.id, channel);
    return channel;
  }

  /** The guild a channel is in (null for a DM or an unknown channel). */
  guildOf(channelId: string): string | null {
    return this.channels.get(channelId)?.guildId ?? null;
  }

  guild(id: string): GuildState {
    const g = this.guilds.get(id);
    if (!g) throw new Error(`fake-discord: unknown guild ${id} (addGuild first)`);
    return g;
  }

  /** The bot's permissions in a guild (its member's), as a bigint. */
  botPermissions(guildId: string): bigint {
    return BigInt(this.member(guildId, this.applicationId)?.permissions ?? '0');
  }

  /** A user's membership of a guild, if they are in it. */
  member(guildId: string, userId: string): MemberState | undefined {
    return this.guilds.get(guildId)?.members.get(userId);
  }

  /** Makes a known user a member of a guild (its own permissions and roles there). */
  addMember(guildId: string, userId: string, options: { permissions?: string; roles?: string[] } = {}): void {
    this.user(userId);
    this.guild(guildId).members.set(userId, {
      permissions: options.permissions ?? DEFAULT_MEMBER_PERMISSIONS,
      roles: options.roles ?? [],
      joinedAt: new Date(this.clock.now() - 3_600_000).toISOString(),
    });
  }

  /** A forum or media channel with its tags (CHANNEL_CREATE is dispatched to a connected bot). */
  addForumChannel(options: ForumChannelOptions): { id: string; tags: ForumTag[] } {
    const guildId = options.guildId ?? this.guildId;
    this.guild(guildId);
    const tags: ForumTag[] = (options.tags ?? []).map((t) => {
      const input = typeof t === 'string' ? { name: t } : t;
      return {
        id: this.snowflakes.next(),
        name: input.name,
        moderated: input.moderated ?? false,
        emoji_id: input.emojiId ?? null,
        emoji_name: input.emojiName ?? null,
      };
    });
    const channel: ChannelState = {
      ...channelDefaults(this),
      id: this.snowflakes.next(),
      name: options.name,
      type: options.media ? 16 : 15,
      topic: options.topic ?? null,
      position: [...this.channels.values()].filter((c) => c.guildId === guildId).length,
      botCanSend: options.botCanSend ?? true,
      guildId,
      flags: options.requireTag ? ChannelFlag.RequireTag : 0,
      availableTags: tags,
    };
    this.channels.set(channel.id, channel);
    if (this.gateway.currentSession && this.gateway.hasIntent(GatewayIntent.Guilds))
      this.gateway.dispatch('CHANNEL_CREATE', channelJson(this, channel, true));
    this.changed();
    return { id: channel.id, tags };
  }

  /** Sets a member's permissions in a guild (the bot's too), keeping their roles. */
  setMemberPermissions(guildId: string, userId: string, permissions: string): void {
    const m = this.member(guildId, userId);
    if (!m) throw new Error(`fake-discord: user ${userId} is not a member of guild ${guildId}`);
    m.permissions = permissions;
  }

  /** The DM channel between the bot and a user (created on first use, like `POST /users/@me/channels`). */
  dmChannel(userId: string): ChannelState {
    for (const c of this.channels.values()) if (c.type === 1 && c.recipientId === userId) return c;
    this.user(userId);
    const channel: ChannelState = {
      ...channelDefaults(this),
      id: this.snowflakes.next(),
      name: '',
      type: 1,
      recipientId: userId,
    };
    this.channels.set(channel.id, channel);
    return channel;
  }

  /** Adds a user; they are a member of the first guild (`permissions`, `roles` there). */
  addUser(u: FakeUserOptions): string {
    const id = u.id ?? this.snowflakes.next();
    this.users.set(id, {
      user: {
        id,
        username: u.username,
        discriminator: '0',
        global_name: u.globalName ?? null,
        avatar: null,
        avatar_decoration_data: null,
        public_flags: 0,
        flags: 0,
        banner: null,
        accent_color: null,
        collectibles: null,
        display_name_styles: null,
        primary_guild: null,
      },
    });
    const options: { permissions?: string; roles?: string[] } = {};
    if (u.permissions !== undefined) options.permissions = u.permissions;
    if (u.roles !== undefined) options.roles = u.roles;
    this.addMember(this.guildId, id, options);
    return id;
  }

  user(id: string): UserState {
    const u = this.users.get(id);
    if (!u) throw new Error(`fake-discord: unknown user ${id} (addUser first)`);
    return u;
  }
}
