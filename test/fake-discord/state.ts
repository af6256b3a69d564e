import { randomBytes } from 'node:crypto';
import { ChangeFeed } from './changes.js';
import { OffsetClock } from './clock.js';
import { DEFAULT_BOT_PERMISSIONS, DEFAULT_MEMBER_PERMISSIONS } from './constants.js';
import { FakeGateway } from './gateway.js';
import { InteractionSigner, type HttpDelivery } from './http-interactions.js';
import type { Json, JsonObject } from './json.js';
import type { FakeMessage } from './messages.js';
import type { OpenApiSpec } from './openapi.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimitConfig } from './ratelimit.js';
import { gatewayHooks } from './routes/gateway.js';
import { SnowflakeGenerator } from './snowflake.js';
import type {
  FakeDiscordOptions,
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
}

export interface UserState {
  user: JsonObject;
  permissions: string;
  roles: string[];
  joinedAt: string;
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
  readonly guildId: string;
  readonly guildName: string;
  readonly guildLocale: string;
  /** Guild boost level: sets the upload limit per file. */
  premiumTier = 0;
  /** Secret of the CDN link signatures (`hm`). */
  readonly cdnSecret = randomBytes(16);

  // --- Discord's data
  readonly channels = new Map<string, ChannelState>();
  readonly users = new Map<string, UserState>();
  readonly defaultUserId: string;
  readonly messages = new Map<string, FakeMessage>();
  /** `enforce_nonce` messages by author and nonce, for NONCE_WINDOW_MS. */
  readonly nonces = new Map<string, { messageId: string; at: number }>();
  readonly attachments = new Map<string, StoredAttachment>();
  readonly interactions = new Map<string, InteractionState>();
  readonly commands: { global: JsonObject[]; guilds: Map<string, JsonObject[]> } = {
    global: [],
    guilds: new Map(),
  };
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
  readonly specQuirks: SpecQuirkRecord[] = [];
  readonly responseViolations: ResponseViolation[] = [];
  readonly interactionResponses: InteractionCallbackRecord[] = [];
  readonly rateLimitHits: RateLimitHit[] = [];
  readonly concurrentEdits: Array<{ messageId: string; path: string; at: number }> = [];
  readonly editsInFlight = new Map<string, number>();
  readonly commandCalls: Record<string, number> = {};
  readonly cdnRequests: Array<{ path: string; status: number; at: number }> = [];
  requestSeq = 0;

  // --- transport
  readonly gateway: FakeGateway;
  readonly rateLimiter: RateLimiter;
  readonly initialRateLimits: RateLimitConfig;
  readonly signer = new InteractionSigner();
  readonly httpDeliveries: HttpDelivery[] = [];
  interactionsMode: 'gateway' | 'http';
  interactionsUrl: string | undefined;

  constructor(options: FakeDiscordOptions, spec: OpenApiSpec) {
    this.options = options;
    this.host = options.host ?? '127.0.0.1';
    this.interactionsMode = options.interactions ?? 'gateway';
    this.interactionsUrl = options.interactionsUrl;
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

    const guild = options.guild ?? {};
    this.guildId = guild.id ?? this.snowflakes.next();
    this.guildName = guild.name ?? 'Fake Guild';
    this.guildLocale = guild.locale ?? 'en-US';
    const channels = guild.channels ?? [{ name: 'general' }];
    channels.forEach((c, position) => {
      const id = c.id ?? this.snowflakes.next();
      this.channels.set(id, {
        id,
        name: c.name,
        type: c.type ?? 0,
        topic: c.topic ?? null,
        parentId: c.parentId ?? null,
        position,
        botCanView: c.botCanView ?? true,
        botCanSend: c.botCanSend ?? true,
      });
    });
    const users = options.users ?? [{ username: 'tester' }];
    let first: string | undefined;
    for (const u of users) {
      const id = this.addUser(u);
      first ??= id;
    }
    this.defaultUserId = first ?? this.addUser({ username: 'tester' });
    this.users.set(this.applicationId, {
      user: this.botUser,
      permissions: DEFAULT_BOT_PERMISSIONS,
      roles: [],
      joinedAt: new Date(this.clock.now() - 86_400_000).toISOString(),
    });
    this.gateway = new FakeGateway(gatewayHooks(this));
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
    for (const c of this.channels.values()) if (c.type === 0 || c.type === 5) return c.id;
    throw new Error('fake-discord: the guild has no text channel');
  }

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
      permissions: u.permissions ?? DEFAULT_MEMBER_PERMISSIONS,
      roles: u.roles ?? [],
      joinedAt: new Date(this.clock.now() - 3_600_000).toISOString(),
    });
    return id;
  }

  user(id: string): UserState {
    const u = this.users.get(id);
    if (!u) throw new Error(`fake-discord: unknown user ${id} (addUser first)`);
    return u;
  }
}
