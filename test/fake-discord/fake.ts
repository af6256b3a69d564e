import { createHmac, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { OffsetClock } from './clock.js';
import { FakeGateway, GatewayIntent } from './gateway.js';
import { isObj, isRecord, toJson, type Json, type JsonObject } from './json.js';
import {
  CREATE_SETTABLE_FLAGS,
  EDIT_SETTABLE_FLAGS,
  FakeMessage,
  MessageFlag,
  embedLength,
  fileSummary,
  normalizeComponents,
  normalizeEmbed,
  pngSize,
  stripNulls,
} from './messages.js';
import { OpenApiSpec } from './openapi.js';
import { InteractionSigner, type HttpDelivery, type PostOptions } from './http-interactions.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimitConfig } from './ratelimit.js';
import { SnowflakeGenerator } from './snowflake.js';
import { TemplateMatcher } from './templates.js';
import type {
  AttachmentInput,
  AttachmentRef,
  AuthKind,
  AutocompleteInput,
  CommandInput,
  CommandOptionValue,
  ComponentInput,
  FakeAttachment,
  FakeDiscordOptions,
  FaultHandle,
  FaultSpec,
  InteractionCallbackRecord,
  InteractionCommonInput,
  MessageVia,
  ModalSubmitInput,
  RateLimitHit,
  RawCommandOption,
  RequestRecord,
  ResponseViolation,
  SpecQuirkRecord,
  StoredAttachment,
  UploadedFile,
  ValidationMode,
  Violation,
} from './types.js';

// ---------------------------------------------------------------------------------------------
// Constants

const API_PREFIX = '/api/v10';
const P = (...bits: number[]): string => bits.reduce((acc, b) => acc | (1n << BigInt(b)), 0n).toString();
/** VIEW_CHANNEL, SEND_MESSAGES, EMBED_LINKS, ATTACH_FILES, READ_MESSAGE_HISTORY, ADD_REACTIONS, USE_EXTERNAL_EMOJIS, USE_APPLICATION_COMMANDS, SEND_MESSAGES_IN_THREADS */
const DEFAULT_BOT_PERMISSIONS = P(10, 11, 14, 15, 16, 6, 18, 31, 38);
const DEFAULT_MEMBER_PERMISSIONS = P(10, 11, 14, 15, 16, 6, 18, 31, 38, 0 /* CREATE_INSTANT_INVITE */);
const ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024;
const uploadLimitForTier = (tier: number): number =>
  tier >= 3 ? 100 * 1024 * 1024 : tier === 2 ? 50 * 1024 * 1024 : ATTACHMENT_SIZE_LIMIT;
const HOUR = 3_600_000;
/**
 * How long a message nonce sent with `enforce_nonce` is remembered. Discord documents only
 * "the past few minutes"; three is the short end of that.
 */
export const NONCE_WINDOW_MS = 3 * 60_000;

export const InteractionType = {
  Ping: 1,
  ApplicationCommand: 2,
  MessageComponent: 3,
  Autocomplete: 4,
  ModalSubmit: 5,
} as const;
export const CallbackType = {
  Pong: 1,
  ChannelMessageWithSource: 4,
  DeferredChannelMessageWithSource: 5,
  DeferredUpdateMessage: 6,
  UpdateMessage: 7,
  ApplicationCommandAutocompleteResult: 8,
  Modal: 9,
  PremiumRequired: 10,
  LaunchActivity: 12,
} as const;

/** What Cloudflare, in front of Discord, answers for a 502. */
const BAD_GATEWAY_PAGE = '<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>';

/** Ready-made Discord error answers for `injectFault`. */
export const DiscordErrors = {
  unknownChannel: { status: 404, body: { message: 'Unknown Channel', code: 10003 } },
  unknownMessage: { status: 404, body: { message: 'Unknown Message', code: 10008 } },
  unknownWebhook: { status: 404, body: { message: 'Unknown Webhook', code: 10015 } },
  unknownInteraction: { status: 404, body: { message: 'Unknown interaction', code: 10062 } },
  missingAccess: { status: 403, body: { message: 'Missing Access', code: 50001 } },
  missingPermissions: { status: 403, body: { message: 'Missing Permissions', code: 50013 } },
  invalidWebhookToken: { status: 401, body: { message: 'Invalid Webhook Token', code: 50027 } },
  oldMessageEditLimit: {
    status: 400,
    body: {
      message: 'Maximum number of edits to messages older than 1 hour reached. Try again later',
      code: 30046,
    },
  },
  alreadyAcknowledged: {
    status: 400,
    body: { message: 'Interaction has already been acknowledged.', code: 40060 },
  },
  internalServerError: { status: 500, body: { message: '500: Internal Server Error', code: 0 } },
  badGateway: {
    status: 502,
    body: BAD_GATEWAY_PAGE,
  },
  serviceUnavailable: { status: 503, body: { message: 'upstream connect error', code: 0 } },
  /** Discord did the work, then its answer was lost: the handler runs, Cloudflare's 502 comes back. */
  answerLost: {
    status: 502,
    afterHandler: true,
    body: BAD_GATEWAY_PAGE,
  },
  rateLimited: (retryAfterSeconds: number, global = false): FaultSpec => ({
    status: 429,
    body: { message: 'You are being rate limited.', retry_after: retryAfterSeconds, global },
  }),
} as const;

// ---------------------------------------------------------------------------------------------
// Internal types

class DiscordHttpError extends Error {
  readonly status: number;
  readonly body: JsonObject;
  constructor(status: number, code: number, message: string, errors?: JsonObject) {
    super(message);
    this.status = status;
    this.body = errors ? { message, code, errors } : { message, code };
  }
}

const err = {
  unauthorized: () => new DiscordHttpError(401, 0, '401: Unauthorized'),
  notFound: () => new DiscordHttpError(404, 0, '404: Not Found'),
  unknownChannel: () => new DiscordHttpError(404, 10003, 'Unknown Channel'),
  unknownGuild: () => new DiscordHttpError(404, 10004, 'Unknown Guild'),
  unknownMember: () => new DiscordHttpError(404, 10007, 'Unknown Member'),
  unknownMessage: () => new DiscordHttpError(404, 10008, 'Unknown Message'),
  unknownUser: () => new DiscordHttpError(404, 10013, 'Unknown User'),
  unknownWebhook: () => new DiscordHttpError(404, 10015, 'Unknown Webhook'),
  unknownCommand: () => new DiscordHttpError(404, 10063, 'Unknown application command'),
  unknownInteraction: () => new DiscordHttpError(404, 10062, 'Unknown interaction'),
  missingAccess: () => new DiscordHttpError(403, 50001, 'Missing Access'),
  missingPermissions: () => new DiscordHttpError(403, 50013, 'Missing Permissions'),
  cannotEditOthers: () => new DiscordHttpError(403, 50005, 'Cannot edit a message authored by another user'),
  invalidWebhookToken: () => new DiscordHttpError(401, 50027, 'Invalid Webhook Token'),
  emptyMessage: () => new DiscordHttpError(400, 50006, 'Cannot send an empty message'),
  alreadyAcknowledged: () => new DiscordHttpError(400, 40060, 'Interaction has already been acknowledged.'),
  oldMessageEdits: () =>
    new DiscordHttpError(
      400,
      30046,
      'Maximum number of edits to messages older than 1 hour reached. Try again later',
    ),
  invalidJson: () => new DiscordHttpError(400, 50109, 'The request body contains invalid JSON.'),
  invalidForm: (errors: JsonObject) => new DiscordHttpError(400, 50035, 'Invalid Form Body', errors),
};

const fieldError = (path: string[], code: string, message: string): JsonObject => {
  let node: JsonObject = { _errors: [{ code, message }] };
  for (const seg of [...path].reverse()) node = { [seg]: node };
  return node;
};

interface HandlerContext {
  method: string;
  path: string;
  template: string;
  params: Record<string, string>;
  query: URLSearchParams;
  auth: AuthKind;
  body: unknown;
  files: UploadedFile[];
  record: RequestRecord;
}

interface HandlerResult {
  status: number;
  body?: Json;
  headers?: Record<string, string>;
}

type Handler = (ctx: HandlerContext) => HandlerResult | Promise<HandlerResult>;

interface RouteDef {
  method: string;
  template: string;
  auth: 'bot' | 'none';
  handler: Handler;
}

interface ChannelState {
  id: string;
  name: string;
  type: number;
  topic: string | null;
  parentId: string | null;
  position: number;
  botCanView: boolean;
  botCanSend: boolean;
}

interface UserState {
  user: JsonObject;
  permissions: string;
  roles: string[];
  joinedAt: string;
}

interface FaultState {
  id: number;
  spec: FaultSpec;
  hits: number;
  remaining: number;
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

/** What `sendCommand` & co. return: the interaction plus accessors for the bot's answer. */
export interface InteractionHandle {
  readonly id: string;
  readonly token: string;
  readonly type: number;
  /** The INTERACTION_CREATE `d` that was dispatched. */
  readonly payload: JsonObject;
  /** The first callback, once the bot acknowledged. */
  readonly callback: InteractionCallbackRecord | undefined;
  /** Resolves with the first callback (POST /interactions/{id}/{token}/callback). */
  response(timeoutMs?: number): Promise<InteractionCallbackRecord>;
  /** The original response message (callback 4/5, or the component's message after 6/7), once it exists. */
  readonly originalMessage: FakeMessage | undefined;
  /** Resolves when the original response message exists. */
  message(timeoutMs?: number): Promise<FakeMessage>;
  /** Resolves when the original response message satisfies `predicate` (e.g. the deferred reply got its embed). */
  waitForMessage(predicate: (m: FakeMessage) => boolean, timeoutMs?: number): Promise<FakeMessage>;
  readonly followUps: FakeMessage[];
  /** The modal the bot opened (callback 9 data). */
  readonly modal: JsonObject | undefined;
  /** The autocomplete choices the bot answered with (callback 8). */
  readonly choices: Json[] | undefined;
}

interface Waiter {
  check: () => void;
}

const toBuffer = (bytes: Buffer | Uint8Array | string): Buffer =>
  typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);

const guessContentType = (filename: string): string => {
  const ext = filename.toLowerCase().split('.').pop() ?? '';
  const map: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    webp: 'image/webp',
    mp3: 'audio/mpeg',
    wav: 'audio/wav',
    ogg: 'audio/ogg',
    flac: 'audio/flac',
    mp4: 'video/mp4',
    mov: 'video/quicktime',
    webm: 'video/webm',
    txt: 'text/plain; charset=utf-8',
    json: 'application/json; charset=utf-8',
    zip: 'application/zip',
  };
  return map[ext] ?? 'application/octet-stream';
};

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks);
}

// ---------------------------------------------------------------------------------------------

export class FakeDiscord {
  // --- identity & config
  readonly token: string;
  readonly applicationId: string;
  readonly botUser: JsonObject;
  readonly guildId: string;
  readonly guildName: string;
  readonly guildLocale: string;
  readonly validation: ValidationMode;
  readonly spec: OpenApiSpec;

  // --- recorded state (read these in assertions)
  /** All stored messages by id (channel messages, interaction responses, follow-ups, ephemeral ones too). */
  readonly messages = new Map<string, FakeMessage>();
  /** `enforce_nonce` messages by author and nonce, for NONCE_WINDOW_MS. */
  readonly #nonces = new Map<string, { messageId: string; at: number }>();
  /** Every API request, in arrival order. */
  readonly requests: RequestRecord[] = [];
  /** Request bodies that violate the OpenAPI spec (or Discord rules the spec cannot express). */
  readonly violations: Violation[] = [];
  /** Requests to paths/methods that are not in the OpenAPI spec. */
  readonly unspecifiedRequests: Array<{
    method: string;
    path: string;
    route: string | null;
    handled: boolean;
  }> = [];
  /** Requests the fake has no handler for (answered 404 `{code: 0}`): a gap in the fake, or a wrong path. */
  readonly unhandledRequests: Array<{ method: string; path: string; inSpec: boolean }> = [];
  /** Bodies that only passed thanks to a documented spec quirk (see SPEC_QUIRKS in openapi.ts). */
  readonly specQuirks: SpecQuirkRecord[] = [];
  /** Fake's own responses that do not match the spec (only with `selfCheckResponses`). */
  readonly responseViolations: ResponseViolation[] = [];
  /** Every interaction callback (POST /interactions/{id}/{token}/callback), in order. */
  readonly interactionResponses: InteractionCallbackRecord[] = [];
  readonly interactions = new Map<string, InteractionState>();
  /** Every 429 sent (by the limiter or an injected fault). */
  readonly rateLimitHits: RateLimitHit[] = [];
  /**
   * Message edits that arrived while another edit of the same message was still being
   * answered (several bot instances must never edit one message at once).
   */
  readonly concurrentEdits: Array<{ messageId: string; path: string; at: number }> = [];
  readonly #editsInFlight = new Map<string, number>();
  /** Registered application commands: global and per guild. */
  readonly commands: { global: JsonObject[]; guilds: Map<string, JsonObject[]> } = {
    global: [],
    guilds: new Map(),
  };
  /** Command-route calls per HTTP method (global + guild scopes), e.g. `{ GET: 1, PUT: 1 }`. */
  readonly commandCalls: Record<string, number> = {};
  readonly attachments = new Map<string, StoredAttachment>();
  readonly cdnRequests: Array<{ path: string; status: number; at: number }> = [];

  readonly gateway: FakeGateway;
  /** HTTP interactions (`interactions: 'http'`): the application's key pair and signed deliveries. */
  readonly signer = new InteractionSigner();
  /** Every HTTP interaction delivery and what the bot answered, in order. */
  readonly httpDeliveries: HttpDelivery[] = [];
  #interactionsMode: 'gateway' | 'http';
  #interactionsUrl: string | undefined;
  readonly rateLimiter: RateLimiter;
  readonly clock: OffsetClock;

  #server: Server;
  #port = 0;
  #host: string;
  readonly #routes: RouteDef[] = [];
  readonly #routeMatcher: TemplateMatcher;
  readonly #snowflakes: SnowflakeGenerator;
  readonly #channels = new Map<string, ChannelState>();
  readonly #users = new Map<string, UserState>();
  readonly #defaultUserId: string;
  readonly #faults: FaultState[] = [];
  #nextFaultId = 1;
  #requestSeq = 0;
  readonly #events = new EventEmitter();
  readonly #waiters = new Set<Waiter>();
  readonly #cdnSecret = randomBytes(16);
  readonly #options: FakeDiscordOptions;
  readonly #oldMessageEdits = new Map<string, number>();
  readonly #initialRateLimits: RateLimitConfig;
  #closed = false;

  constructor(options: FakeDiscordOptions = {}, spec?: OpenApiSpec) {
    this.#options = options;
    this.#interactionsMode = options.interactions ?? 'gateway';
    this.#interactionsUrl = options.interactionsUrl;
    this.#host = options.host ?? '127.0.0.1';
    this.clock = new OffsetClock(options.clock, options.startTime);
    this.#snowflakes = new SnowflakeGenerator(() => this.clock.now());
    this.spec = spec ?? OpenApiSpec.load(options.specPath);
    this.validation = options.validation ?? 'reject';
    this.applicationId = options.applicationId ?? this.#snowflakes.next();
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
    this.#initialRateLimits = rlConfig;
    this.rateLimiter = new RateLimiter(rl === true || typeof rl === 'object', rlConfig);

    const guild = options.guild ?? {};
    this.guildId = guild.id ?? this.#snowflakes.next();
    this.guildName = guild.name ?? 'Fake Guild';
    this.guildLocale = guild.locale ?? 'en-US';
    const channels = guild.channels ?? [{ name: 'general' }];
    channels.forEach((c, position) => {
      const id = c.id ?? this.#snowflakes.next();
      this.#channels.set(id, {
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
    this.#defaultUserId = first ?? this.addUser({ username: 'tester' });
    this.#users.set(this.applicationId, {
      user: this.botUser,
      permissions: DEFAULT_BOT_PERMISSIONS,
      roles: [],
      joinedAt: new Date(this.clock.now() - 86_400_000).toISOString(),
    });

    this.gateway = new FakeGateway({
      token: () => this.token,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
      compression: options.gatewayCompression ?? 'honor',
      resumeUrl: () => this.gatewayUrl,
      onChange: () => this.#changed(),
      readyPayload: () => ({
        v: 10,
        user: { ...this.botUser, verified: true, mfa_enabled: false, email: null },
        user_settings: {},
        guilds: [{ id: this.guildId, unavailable: true }],
        private_channels: [],
        relationships: [],
        presences: [],
        guild_join_requests: [],
        geo_ordered_rtc_regions: ['us-east', 'us-central'],
        application: { id: this.applicationId, flags: 0 },
        auth: {},
        _trace: ['["fake-discord-gateway",{"micros":0}]'],
      }),
      guildCreates: (session) =>
        (session.intents & GatewayIntent.Guilds) !== 0 ? [this.#guildCreatePayload()] : [],
    });

    this.#registerRoutes();
    this.#routeMatcher = new TemplateMatcher(new Set(this.#routes.map((r) => r.template)));
    this.#server = createServer((req, res) => {
      void this.#onRequest(req, res);
    });
    this.#server.on('upgrade', (req, socket, head: Buffer) => this.gateway.handleUpgrade(req, socket, head));
  }

  // ===========================================================================================
  // Lifecycle

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#options.port ?? 0, this.#host, () => resolve());
    });
    this.#port = (this.#server.address() as AddressInfo).port;
    if (this.#options.warmUpValidators) {
      this.spec.warmUp([
        { template: '/channels/{channel_id}/messages', method: 'POST' },
        { template: '/channels/{channel_id}/messages/{message_id}', method: 'PATCH' },
        { template: '/interactions/{interaction_id}/{interaction_token}/callback', method: 'POST' },
        { template: '/webhooks/{webhook_id}/{webhook_token}/messages/@original', method: 'PATCH' },
        { template: '/webhooks/{webhook_id}/{webhook_token}', method: 'POST' },
        { template: '/applications/{application_id}/commands', method: 'PUT' },
      ]);
    }
  }

  /** Closes sockets, the HTTP server and rejects pending waits, so the test process can exit. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.gateway.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#events.emit('closed');
    this.#events.removeAllListeners();
    this.#waiters.clear();
  }

  get port(): number {
    return this.#port;
  }

  /** `http://127.0.0.1:PORT` */
  get baseUrl(): string {
    return `http://${this.#host}:${this.#port}`;
  }

  /** Pass as `rest: { api }` to discord.js (it appends `/v10`). */
  get apiUrl(): string {
    return `${this.baseUrl}/api`;
  }

  get gatewayUrl(): string {
    return `ws://${this.#host}:${this.#port}`;
  }

  get cdnUrl(): string {
    return `${this.baseUrl}/cdn`;
  }

  get defaultChannelId(): string {
    for (const c of this.#channels.values()) if (c.type === 0 || c.type === 5) return c.id;
    throw new Error('fake-discord: the guild has no text channel');
  }

  get channelIds(): string[] {
    return [...this.#channels.keys()];
  }

  channelIdByName(name: string): string {
    for (const c of this.#channels.values()) if (c.name === name) return c.id;
    throw new Error(`fake-discord: no channel named ${name}`);
  }

  get defaultUserId(): string {
    return this.#defaultUserId;
  }

  // ===========================================================================================
  // Time, waiting

  /** Fake-clock "now" (epoch ms). */
  now(): number {
    return this.clock.now();
  }

  /** Moves the fake clock forward (token expiry, old-message edits, CDN link expiry). */
  advanceTime(ms: number): void {
    this.clock.advance(ms);
    this.#changed();
  }

  #changed(): void {
    for (const w of [...this.#waiters]) w.check();
    for (const l of this.#changeListeners) l();
  }

  readonly #changeListeners = new Set<() => void>();

  /** Channels and threads, for a client listing them (the playground). */
  channelList(): { id: string; name: string; type: number; parentId: string | null }[] {
    return [...this.#channels.values()].map((c) => ({
      id: c.id,
      name: c.name,
      type: c.type,
      parentId: c.parentId,
    }));
  }

  /** A user's display name (global name, else username). */
  userName(id: string): string {
    const u = this.#users.get(id)?.user;
    return String(u?.['global_name'] ?? u?.['username'] ?? id);
  }

  /** Who sent an interaction (null for unknown ids). */
  interactionUser(interactionId: string | null): string | null {
    return interactionId === null ? null : (this.interactions.get(interactionId)?.userId ?? null);
  }

  /** Calls `listener` after every state change (messages, channels, interactions); returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** Resolves with the first truthy value of `check()`, re-evaluated on every state change and every 20 ms. */
  waitFor<T>(
    check: () => T | undefined | null | false,
    options: { timeoutMs?: number; description?: string } = {},
  ): Promise<T> {
    const timeoutMs = options.timeoutMs ?? 10_000;
    return new Promise<T>((resolve, reject) => {
      const first = check();
      if (first !== undefined && first !== null && first !== false) {
        resolve(first);
        return;
      }
      const waiter: Waiter = {
        check: () => {
          const value = check();
          if (value !== undefined && value !== null && value !== false) {
            cleanup();
            resolve(value);
          }
        },
      };
      const onClose = (): void => {
        cleanup();
        reject(new Error(`fake-discord closed while waiting for ${options.description ?? 'a condition'}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `fake-discord: timed out after ${timeoutMs} ms waiting for ${options.description ?? 'a condition'}`,
          ),
        );
      }, timeoutMs);
      // State changes of the fake re-check immediately; polling covers conditions outside the fake (client state).
      const poll = setInterval(() => waiter.check(), 20);
      const cleanup = (): void => {
        clearTimeout(timer);
        clearInterval(poll);
        this.#waiters.delete(waiter);
        this.#events.off('closed', onClose);
      };
      this.#waiters.add(waiter);
      this.#events.once('closed', onClose);
    });
  }

  /** Resolves once a gateway session got READY and its GUILD_CREATE. */
  async waitForGatewayReady(timeoutMs = 10_000): Promise<void> {
    await this.waitFor(
      () => {
        const s = this.gateway.currentSession;
        return s !== null && s.connection !== null && s.events.some((e) => e.t === 'READY');
      },
      { timeoutMs, description: 'gateway READY' },
    );
  }

  /** Resolves once the gateway has seen `count` successful RESUMEs in total. */
  async waitForResume(count = 1, timeoutMs = 10_000): Promise<void> {
    await this.waitFor(() => this.gateway.resumes >= count && this.gateway.connected, {
      timeoutMs,
      description: `gateway RESUME #${count}`,
    });
  }

  /** Waits for a request matching `filter` and returns its record. */
  waitForRequest(filter: (r: RequestRecord) => boolean, timeoutMs = 10_000): Promise<RequestRecord> {
    return this.waitFor(() => this.requests.find((r) => r.status !== 0 && filter(r)), {
      timeoutMs,
      description: 'a matching request',
    });
  }

  // ===========================================================================================
  // Control: gateway, rate limits, faults

  /** Closes the bot's gateway socket (default 4000, resumable); discord.js should reconnect and RESUME. */
  disconnectGateway(code = 4000, reason = 'Unknown error'): void {
    this.gateway.disconnect(code, reason);
  }

  /** Sends op 7 RECONNECT. */
  requestGatewayReconnect(): void {
    this.gateway.requestReconnect();
  }

  /** Sends op 9 INVALID_SESSION. */
  invalidateGatewaySession(resumable = false): void {
    this.gateway.invalidateSession(resumable);
  }

  /** Turns rate limiting on/off; `config` overrides the limits given at start (not the previous call's). */
  setRateLimits(on: boolean, config?: Partial<RateLimitConfig>): void {
    this.rateLimiter.enabled = on;
    this.rateLimiter.config = { ...this.#initialRateLimits, ...(config ?? {}) };
    this.rateLimiter.reset();
  }

  get count429(): number {
    return this.rateLimitHits.length;
  }

  /** Makes the next `count` matching requests fail with the given status/body. */
  injectFault(spec: FaultSpec): FaultHandle {
    const state: FaultState = { id: this.#nextFaultId++, spec, hits: 0, remaining: spec.count ?? 1 };
    this.#faults.push(state);
    return {
      id: state.id,
      spec,
      get hits() {
        return state.hits;
      },
      get remaining() {
        return state.remaining;
      },
      remove: () => {
        const i = this.#faults.indexOf(state);
        if (i >= 0) this.#faults.splice(i, 1);
      },
    };
  }

  clearFaults(): void {
    this.#faults.length = 0;
  }

  #takeFault(method: string, path: string, template: string | null): FaultState | undefined {
    for (const f of this.#faults) {
      if (f.remaining <= 0) continue;
      if (f.spec.method && f.spec.method.toUpperCase() !== method) continue;
      const r = f.spec.route;
      if (r !== undefined) {
        if (typeof r === 'string') {
          if (r !== path && r !== template) continue;
        } else if (!r.test(path) && !(template !== null && r.test(template))) continue;
      }
      f.remaining -= 1;
      f.hits += 1;
      return f;
    }
    return undefined;
  }

  /** Returns the violations recorded so far and forgets them (for tests that provoke one on purpose). */
  takeViolations(): Violation[] {
    return this.violations.splice(0, this.violations.length);
  }

  /** Throws with a readable list if any request violated the spec (or a Discord rule). */
  assertNoViolations(): void {
    if (this.violations.length === 0) return;
    const lines = this.violations.map((v) => {
      const errs = v.errors.map((e) => `      ${e.path || '(body)'}: ${e.message}`).join('\n');
      return `  [${v.source}] ${v.method} ${v.path}${v.operationId ? ` (${v.operationId})` : ''}\n${errs}`;
    });
    throw new Error(
      `fake-discord: ${this.violations.length} request(s) violated the Discord API:\n${lines.join('\n')}`,
    );
  }

  // ===========================================================================================
  // Guild boost level: the upload limit per file (Discord: 10 MiB, 50 MiB at tier 2, 100 MiB at tier 3)

  #premiumTier = 0;

  setGuildPremiumTier(tier: 0 | 1 | 2 | 3): void {
    this.#premiumTier = tier;
  }

  // ===========================================================================================
  // Users, attachments, messages from users

  addUser(u: {
    id?: string;
    username: string;
    globalName?: string | null;
    permissions?: string;
    roles?: string[];
  }): string {
    const id = u.id ?? this.#snowflakes.next();
    this.#users.set(id, {
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

  #signCdn(id: string, filename: string, channelId: string): { url: string; proxyUrl: string } {
    const issued = Math.floor(this.clock.now() / 1000);
    const expires = issued + 24 * 3600;
    const ex = expires.toString(16);
    const is = issued.toString(16);
    const hm = createHmac('sha256', this.#cdnSecret).update(`${id}:${ex}:${is}`).digest('hex');
    const tail = `attachments/${channelId}/${id}/${encodeURIComponent(filename)}?ex=${ex}&is=${is}&hm=${hm}&`;
    return { url: `${this.baseUrl}/cdn/${tail}`, proxyUrl: `${this.baseUrl}/media/${tail}` };
  }

  #attachmentJson(
    a: StoredAttachment,
    extra: { description?: string; width?: number; height?: number } = {},
  ): JsonObject {
    const { url, proxyUrl } = this.#signCdn(a.id, a.filename, a.channelId);
    const out: JsonObject = {
      id: a.id,
      filename: a.filename,
      size: a.bytes.length,
      url,
      proxy_url: proxyUrl,
      content_type: a.contentType,
    };
    const dims =
      extra.width !== undefined && extra.height !== undefined
        ? { width: extra.width, height: extra.height }
        : pngSize(a.bytes);
    if (dims) {
      out['width'] = dims.width;
      out['height'] = dims.height;
    }
    if (extra.description !== undefined) out['description'] = extra.description;
    if (a.ephemeral) out['ephemeral'] = true;
    return out;
  }

  /** Registers bytes on the fake CDN and returns the Discord attachment object (use its id in interactions). */
  addAttachment(input: AttachmentInput, channelId?: string): FakeAttachment & JsonObject {
    const stored: StoredAttachment = {
      id: this.#snowflakes.next(),
      filename: input.filename,
      contentType: input.contentType ?? guessContentType(input.filename),
      bytes: toBuffer(input.bytes),
      channelId: channelId ?? this.defaultChannelId,
      ephemeral: input.ephemeral ?? true,
    };
    this.attachments.set(stored.id, stored);
    const extra: { description?: string; width?: number; height?: number } = {};
    if (input.description !== undefined) extra.description = input.description;
    if (input.width !== undefined) extra.width = input.width;
    if (input.height !== undefined) extra.height = input.height;
    const json = this.#attachmentJson(stored, extra);
    return {
      ...json,
      id: stored.id,
      filename: stored.filename,
      size: stored.bytes.length,
      content_type: stored.contentType,
      url: String(json['url']),
      proxy_url: String(json['proxy_url']),
    };
  }

  #resolveAttachment(ref: AttachmentRef, channelId: string): JsonObject {
    if (typeof ref === 'string') {
      const a = this.attachments.get(ref);
      if (!a) throw new Error(`fake-discord: unknown attachment id ${ref} (register it with addAttachment)`);
      return this.#attachmentJson(a);
    }
    return this.addAttachment(ref, channelId);
  }

  /** Simulates a user posting in a channel (MESSAGE_CREATE is dispatched if the bot has GUILD_MESSAGES). */
  postUserMessage(input: { content: string; channelId?: string; userId?: string }): FakeMessage {
    const channelId = input.channelId ?? this.defaultChannelId;
    const user = this.#user(input.userId ?? this.#defaultUserId);
    const id = this.#snowflakes.next();
    const msg = new FakeMessage({
      id,
      channelId,
      ephemeral: false,
      createdAt: this.clock.now(),
      interactionId: null,
      source: 'user',
      data: this.#baseMessage(id, channelId, user.user, 0, 0),
    });
    msg.data['content'] = input.content;
    this.messages.set(id, msg);
    this.#emitMessage('MESSAGE_CREATE', msg);
    this.#changed();
    return msg;
  }

  /** Messages in a channel (oldest first), excluding deleted unless asked. */
  channelMessages(channelId: string = this.defaultChannelId, includeDeleted = false): FakeMessage[] {
    return [...this.messages.values()].filter(
      (m) => m.channelId === channelId && (includeDeleted || !m.deleted),
    );
  }

  get globalCommands(): JsonObject[] {
    return this.commands.global;
  }

  guildCommands(guildId: string = this.guildId): JsonObject[] {
    return this.commands.guilds.get(guildId) ?? [];
  }

  // ===========================================================================================
  // Wire objects

  #user(id: string): UserState {
    const u = this.#users.get(id);
    if (!u) throw new Error(`fake-discord: unknown user ${id} (addUser first)`);
    return u;
  }

  #channelJson(c: ChannelState, withGuildId: boolean): JsonObject {
    const out: JsonObject = {
      id: c.id,
      type: c.type,
      name: c.name,
      position: c.position,
      parent_id: c.parentId,
      flags: 0,
      permission_overwrites: [],
    };
    if (withGuildId) out['guild_id'] = this.guildId;
    if (c.type === 0 || c.type === 5) {
      Object.assign(out, { topic: c.topic, nsfw: false, last_message_id: null, rate_limit_per_user: 0 });
    }
    if (c.type === 2) Object.assign(out, { bitrate: 64000, user_limit: 0, rtc_region: null, nsfw: false });
    if (c.type === 10 || c.type === 11 || c.type === 12) {
      delete out['permission_overwrites'];
      delete out['position'];
      Object.assign(out, {
        owner_id: this.applicationId,
        last_message_id: null,
        rate_limit_per_user: 0,
        message_count: 0,
        member_count: 1,
        total_message_sent: 0,
        thread_metadata: {
          archived: false,
          auto_archive_duration: 1440,
          archive_timestamp: new Date(this.clock.now()).toISOString(),
          locked: false,
        },
      });
    }
    return out;
  }

  #memberJson(u: UserState, withPermissions: boolean): JsonObject {
    const out: JsonObject = {
      user: u.user,
      roles: u.roles,
      joined_at: u.joinedAt,
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
    if (withPermissions) out['permissions'] = u.permissions;
    return out;
  }

  #guildCreatePayload(): JsonObject {
    const bot = this.#user(this.applicationId);
    return {
      id: this.guildId,
      name: this.guildName,
      icon: null,
      splash: null,
      discovery_splash: null,
      banner: null,
      description: null,
      owner_id: this.#options.guild?.ownerId ?? this.#defaultUserId,
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
      premium_tier: this.#premiumTier,
      premium_subscription_count: this.#premiumTier * 7,
      premium_progress_bar_enabled: false,
      preferred_locale: this.guildLocale,
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
      member_count: this.#users.size,
      joined_at: bot.joinedAt,
      roles: [
        {
          id: this.guildId,
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
      channels: [...this.#channels.values()].map((c) => this.#channelJson(c, false)),
      threads: [],
      members: [this.#memberJson(bot, false)],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
      embedded_activities: [],
      activity_instances: [],
    };
  }

  #applicationJson(): JsonObject {
    const owner = this.#user(this.#defaultUserId).user;
    return {
      id: this.applicationId,
      name: String(this.botUser['username']),
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
      verify_key: createHmac('sha256', this.#cdnSecret).update('verify').digest('hex'),
      flags: 0,
      flags_new: '0',
      eligible_oauth2_scopes: [],
      owner,
      team: null,
      bot: this.botUser,
      approximate_guild_count: 1,
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

  #baseMessage(id: string, channelId: string, author: JsonObject, type: number, flags: number): JsonObject {
    return {
      type,
      content: '',
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      timestamp: new Date(this.clock.now()).toISOString(),
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

  #emitMessage(t: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE' | 'MESSAGE_DELETE', msg: FakeMessage): void {
    if (msg.ephemeral || !this.gateway.currentSession || !this.gateway.hasIntent(GatewayIntent.GuildMessages))
      return;
    if (t === 'MESSAGE_DELETE') {
      this.gateway.dispatch(t, { id: msg.id, channel_id: msg.channelId, guild_id: this.guildId });
      return;
    }
    const authorId = msg.authorId;
    const member = authorId ? this.#users.get(authorId) : undefined;
    const d: JsonObject = { ...msg.data, guild_id: this.guildId };
    if (member) {
      const m = this.#memberJson(member, false);
      delete m['user'];
      d['member'] = m;
    }
    this.gateway.dispatch(t, d);
  }

  // ===========================================================================================
  // Message bodies

  /** Applies a create/edit body to a message object the way Discord does. */
  #applyMessageBody(
    target: JsonObject,
    body: JsonObject,
    files: UploadedFile[],
    mode: 'create' | 'edit',
    channelId: string,
    ephemeral: boolean,
  ): JsonObject {
    const next = structuredClone(target);
    if ('content' in body) next['content'] = typeof body['content'] === 'string' ? body['content'] : '';
    if (typeof body['flags'] === 'number') {
      const current = typeof next['flags'] === 'number' ? next['flags'] : 0;
      const settable = mode === 'create' ? CREATE_SETTABLE_FLAGS : EDIT_SETTABLE_FLAGS;
      next['flags'] = (current & ~settable) | (body['flags'] & settable);
    }
    if (mode === 'create' && typeof body['tts'] === 'boolean') next['tts'] = body['tts'];
    if (mode === 'create' && isObj(body['poll'])) next['poll'] = this.#pollJson(body['poll']);

    // attachments: `attachments` lists the ones to keep (existing ids) + metadata for new uploads (id = file index)
    const existing = Array.isArray(next['attachments']) ? next['attachments'].filter(isObj) : [];
    const meta = Array.isArray(body['attachments']) ? body['attachments'].filter(isObj) : null;
    const kept = meta
      ? existing.filter((a) => meta.some((m) => String(m['id']) === String(a['id'])))
      : existing;
    const added: JsonObject[] = [];
    files.forEach((file, index) => {
      const indexKey = /^files\[(\d+)\]$/.exec(file.field)?.[1] ?? String(index);
      const m = meta?.find((x) => String(x['id']) === indexKey);
      const stored: StoredAttachment = {
        id: this.#snowflakes.next(),
        filename: typeof m?.['filename'] === 'string' ? m['filename'] : file.filename,
        contentType: file.contentType || guessContentType(file.filename),
        bytes: file.bytes,
        channelId,
        ephemeral,
      };
      this.attachments.set(stored.id, stored);
      const extra: { description?: string } = {};
      if (typeof m?.['description'] === 'string') extra.description = m['description'];
      added.push(this.#attachmentJson(stored, extra));
    });
    const attachments = [...kept, ...added];
    next['attachments'] = attachments;

    const resolveMedia = (url: string): JsonObject => {
      if (url.startsWith('attachment://')) {
        const name = url.slice('attachment://'.length);
        const a = attachments.find((x) => x['filename'] === name);
        if (a) {
          const out: JsonObject = {
            id: String(a['id']),
            url: String(a['url']),
            proxy_url: String(a['proxy_url']),
            width: typeof a['width'] === 'number' ? a['width'] : null,
            height: typeof a['height'] === 'number' ? a['height'] : null,
            content_type: typeof a['content_type'] === 'string' ? a['content_type'] : null,
            attachment_id: String(a['id']),
            filename: String(a['filename']),
            size: typeof a['size'] === 'number' ? a['size'] : 0,
          };
          return out;
        }
      }
      return {
        id: this.#snowflakes.next(),
        url,
        proxy_url: url,
        width: null,
        height: null,
        content_type: null,
      };
    };
    if ('embeds' in body) {
      const embeds = body['embeds'];
      next['embeds'] = Array.isArray(embeds)
        ? embeds.filter(isObj).map((e) => normalizeEmbed(e, resolveMedia))
        : [];
    }
    if ('components' in body) {
      const components = body['components'];
      next['components'] = Array.isArray(components) ? normalizeComponents(components, resolveMedia) : [];
    }
    return next;
  }

  #pollJson(poll: JsonObject): JsonObject {
    const question = isObj(poll['question']) ? poll['question'] : {};
    const answers = Array.isArray(poll['answers']) ? poll['answers'].filter(isObj) : [];
    const hours = typeof poll['duration'] === 'number' ? poll['duration'] : 24;
    return {
      question: { text: typeof question['text'] === 'string' ? question['text'] : '' },
      answers: answers.map((a, i) => {
        const media = isObj(a['poll_media']) ? a['poll_media'] : {};
        const out: JsonObject = { text: typeof media['text'] === 'string' ? media['text'] : '' };
        if (isObj(media['emoji'])) {
          out['emoji'] = {
            id: typeof media['emoji']['id'] === 'string' ? media['emoji']['id'] : null,
            name: media['emoji']['name'] ?? null,
          };
        }
        return { answer_id: i + 1, poll_media: out };
      }),
      expiry: new Date(this.clock.now() + hours * HOUR).toISOString(),
      allow_multiselect: poll['allow_multiselect'] === true,
      layout_type: typeof poll['layout_type'] === 'number' ? poll['layout_type'] : 1,
      results: { is_finalized: false, answer_counts: [] },
    };
  }

  /** Rules Discord enforces that the spec cannot express. Throws a Discord error (recorded as a semantic violation). */
  #checkMessageRules(msg: JsonObject, ctx: HandlerContext | null, hasBodyFields: boolean): void {
    const content = typeof msg['content'] === 'string' ? msg['content'] : '';
    const embeds = Array.isArray(msg['embeds']) ? msg['embeds'].filter(isObj) : [];
    const components = Array.isArray(msg['components']) ? msg['components'] : [];
    const attachments = Array.isArray(msg['attachments']) ? msg['attachments'] : [];
    const flags = typeof msg['flags'] === 'number' ? msg['flags'] : 0;
    let error: DiscordHttpError | null = null;
    if (content.length > 2000) {
      error = err.invalidForm(
        fieldError(['content'], 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.'),
      );
    } else if (embeds.reduce((n, e) => n + embedLength(e as JsonObject), 0) > 6000) {
      error = err.invalidForm(
        fieldError(['embeds'], 'MAX_EMBED_SIZE_EXCEEDED', 'Embed size exceeds maximum size of 6000'),
      );
    } else if ((flags & MessageFlag.IsComponentsV2) !== 0 && (content !== '' || embeds.length > 0)) {
      error = err.invalidForm(
        fieldError(
          [content !== '' ? 'content' : 'embeds'],
          'MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2',
          `The '${content !== '' ? 'content' : 'embeds'}' field cannot be used when using MessageFlags.IS_COMPONENTS_V2`,
        ),
      );
    } else if (
      hasBodyFields &&
      content === '' &&
      embeds.length === 0 &&
      components.length === 0 &&
      attachments.length === 0 &&
      msg['poll'] === undefined &&
      (flags & MessageFlag.Loading) === 0
    ) {
      error = err.emptyMessage();
    }
    if (error) {
      if (ctx) {
        const errors = error.body['errors'];
        this.violations.push({
          source: 'semantic',
          method: ctx.method,
          path: ctx.path,
          route: ctx.template,
          operationId: this.spec.operationId(ctx.template, ctx.method),
          errors: [
            { path: '', keyword: 'discord', message: `${error.body['code']}: ${error.message}`, params: {} },
          ],
          discordErrors: isRecord(errors) ? (errors as JsonObject) : {},
          body: toJson(ctx.body),
          at: Date.now(),
        });
      }
      throw error;
    }
  }

  #recordEdit(
    msg: FakeMessage,
    ctx: HandlerContext,
    via: MessageVia,
    body: JsonObject,
    after: JsonObject,
  ): void {
    msg.edits.push({
      at: Date.now(),
      clockAt: this.clock.now(),
      method: ctx.method,
      route: ctx.template,
      via,
      body,
      before: msg.data,
      after,
    });
    msg.data = after;
  }

  // ===========================================================================================
  // Interactions (fake -> bot)

  #interactionBase(type: number, data: JsonObject, input: InteractionCommonInput): InteractionState {
    const channelId = input.channelId ?? this.defaultChannelId;
    const channel = this.#channels.get(channelId);
    if (!channel) throw new Error(`fake-discord: unknown channel ${channelId}`);
    const userId = input.userId ?? this.#defaultUserId;
    const user = this.#user(userId);
    const id = this.#snowflakes.next();
    const token = `aW50ZXJhY3Rpb246${Buffer.from(`${id}:`).toString('base64url')}${randomBytes(96).toString('base64url')}`;
    const appPermissions = input.appPermissions ?? DEFAULT_BOT_PERMISSIONS;
    const guildId = input.guildId ?? this.guildId;
    const payload: JsonObject = {
      app_permissions: appPermissions,
      application_id: this.applicationId,
      attachment_size_limit: uploadLimitForTier(this.#premiumTier),
      authorizing_integration_owners: { '0': guildId },
      channel: { ...this.#channelJson(channel, true), permissions: appPermissions },
      channel_id: channelId,
      context: 0,
      data,
      entitlement_sku_ids: [],
      entitlements: [],
      guild: { id: guildId, locale: this.guildLocale, features: [] },
      guild_id: guildId,
      guild_locale: this.guildLocale,
      id,
      locale: input.locale ?? 'en-US',
      member: this.#memberJson(user, true),
      token,
      type,
      version: 1,
    };
    const state: InteractionState = {
      id,
      token,
      type,
      payload,
      createdAt: this.clock.now(),
      channelId,
      userId,
      callbacks: [],
      sourceMessageId: null,
      originalMessageId: null,
      followUpIds: [],
      modal: undefined,
      choices: undefined,
    };
    return state;
  }

  #dispatchInteraction(state: InteractionState): InteractionHandle {
    this.interactions.set(state.id, state);
    if (this.#interactionsMode === 'http') void this.#deliverOverHttp(state);
    else this.gateway.dispatch('INTERACTION_CREATE', state.payload);
    return this.#handle(state);
  }

  // ===========================================================================================
  // HTTP interactions (an application with an Interactions Endpoint URL)

  /** The application's public key (hex), what the bot gets as DISCORD_PUBLIC_KEY. */
  get publicKey(): string {
    return this.signer.publicKey;
  }

  get interactionsMode(): 'gateway' | 'http' {
    return this.#interactionsMode;
  }

  /** Switches how interactions reach the bot; `http` needs the bot's `POST /interactions` URL. */
  setInteractionsMode(mode: 'gateway' | 'http', url?: string): void {
    this.#interactionsMode = mode;
    if (url !== undefined) this.#interactionsUrl = url;
  }

  #requireUrl(): string {
    if (!this.#interactionsUrl) throw new Error('fake-discord: no interactions URL (setInteractionsMode)');
    return this.#interactionsUrl;
  }

  /**
   * Delivers an interaction as Discord does to an Interactions Endpoint URL: signed
   * POST; a 200 body is the initial response (checked like a callback: spec, type,
   * 3 s deadline, double acknowledgement); a 202 means the bot answered through the
   * callback endpoint, which must then already have happened.
   */
  async #deliverOverHttp(state: InteractionState, opts: PostOptions = {}): Promise<HttpDelivery> {
    const delivery = await this.signer.post(
      this.#requireUrl(),
      JSON.stringify(state.payload),
      state.id,
      opts,
    );
    this.httpDeliveries.push(delivery);
    if (delivery.status === 200 && isObj(delivery.body)) {
      const problem = this.#applyInlineResponse(state, delivery.body);
      if (problem !== undefined) delivery.problem = problem;
    } else if (delivery.status === 202) {
      if (state.callbacks.length === 0) delivery.problem = '202 without a callback: the interaction failed';
    } else {
      delivery.problem = `interaction failed: HTTP ${delivery.status || delivery.error}`;
    }
    this.#changed();
    return delivery;
  }

  /** The bot's HTTP response body as the interaction's initial response; returns what went wrong, if anything. */
  #applyInlineResponse(state: InteractionState, body: JsonObject): string | undefined {
    const template = '/interactions/{interaction_id}/{interaction_token}/callback';
    const path = `/interactions/${state.id}/${state.token}/callback`;
    const record: RequestRecord = {
      seq: ++this.#requestSeq,
      method: 'POST',
      path,
      route: template,
      query: {},
      auth: 'none',
      status: 0,
      at: Date.now(),
      clockAt: this.clock.now(),
      body,
      files: [],
      inSpec: true,
      rateLimited: false,
      fault: false,
      response: undefined,
      responseHeaders: {},
    };
    const result =
      this.validation === 'off' ? undefined : this.spec.validateRequestBody(template, 'POST', body);
    if (result && result.ok === false) {
      this.violations.push({
        source: 'openapi',
        method: 'POST',
        path: `${path} (HTTP response)`,
        route: template,
        operationId: this.spec.operationId(template, 'POST'),
        errors: result.errors,
        discordErrors: result.discordErrors,
        body,
        at: Date.now(),
      });
      return 'HTTP response body is not a valid interaction response';
    }
    const ctx: HandlerContext = {
      method: 'POST',
      path,
      template,
      params: { interaction_id: state.id, interaction_token: state.token },
      query: new URLSearchParams(),
      auth: 'none',
      body,
      files: [],
      record,
    };
    try {
      const out = this.#interactionCallback(ctx);
      record.status = out.status;
      return undefined;
    } catch (e) {
      if (e instanceof DiscordHttpError)
        return `HTTP response refused: ${e.status} ${JSON.stringify(e.body)}`;
      throw e;
    }
  }

  /** Delivers an interaction created earlier once more (Discord may deliver twice). */
  redeliver(interactionId: string, opts: PostOptions = {}): Promise<HttpDelivery> {
    const state = this.interactions.get(interactionId);
    if (!state) throw new Error(`fake-discord: unknown interaction ${interactionId}`);
    return this.#deliverOverHttp(state, opts);
  }

  /** A PING, as Discord sends when the Interactions Endpoint URL is saved (and with bad signatures to test it). */
  sendPing(opts: PostOptions = {}): Promise<HttpDelivery> {
    const id = this.#snowflakes.next();
    const body = JSON.stringify({
      id,
      application_id: this.applicationId,
      type: 1,
      token: `ping-${id}`,
      version: 1,
      user: this.botUser,
    });
    return this.signer.post(this.#requireUrl(), body, id, opts);
  }

  /** POSTs any body (signed as `opts` says) to the interactions URL: for malformed-input tests. */
  postRawInteraction(body: string, opts: PostOptions = {}): Promise<HttpDelivery> {
    return this.signer.post(this.#requireUrl(), body, null, opts);
  }

  #handle(state: InteractionState): InteractionHandle {
    const messages = this.messages;
    const original = (): FakeMessage | undefined =>
      state.originalMessageId ? messages.get(state.originalMessageId) : undefined;
    return {
      id: state.id,
      token: state.token,
      type: state.type,
      payload: state.payload,
      get callback() {
        return state.callbacks[0];
      },
      response: (timeoutMs) =>
        this.waitFor(() => state.callbacks[0], {
          timeoutMs: timeoutMs ?? 10_000,
          description: `callback of interaction ${state.id}`,
        }),
      get originalMessage() {
        return original();
      },
      message: (timeoutMs) =>
        this.waitFor(original, {
          timeoutMs: timeoutMs ?? 10_000,
          description: `original response of ${state.id}`,
        }),
      waitForMessage: (predicate, timeoutMs) =>
        this.waitFor(
          () => {
            const m = original();
            return m && predicate(m) ? m : undefined;
          },
          { timeoutMs: timeoutMs ?? 10_000, description: `original response of ${state.id} to match` },
        ),
      get followUps() {
        return state.followUpIds
          .map((id) => messages.get(id))
          .filter((m): m is FakeMessage => m !== undefined);
      },
      get modal() {
        return state.modal;
      },
      get choices() {
        return state.choices;
      },
    };
  }

  #registeredCommand(name: string, guildId: string): JsonObject | undefined {
    return (
      this.guildCommands(guildId).find((c) => c['name'] === name) ??
      this.commands.global.find((c) => c['name'] === name)
    );
  }

  #buildOptions(
    defs: Json | undefined,
    options: Record<string, CommandOptionValue> | RawCommandOption[] | undefined,
    attachments: Record<string, AttachmentRef> | undefined,
    focused: string | undefined,
    resolved: {
      attachments: JsonObject;
      users: JsonObject;
      members: JsonObject;
      channels: JsonObject;
      roles: JsonObject;
    },
    channelId: string,
  ): Json[] {
    if (Array.isArray(options)) return toJson(options) as Json[];
    const defList = Array.isArray(defs) ? defs.filter(isObj) : [];
    const out: Json[] = [];
    for (const [name, value] of Object.entries(options ?? {})) {
      const def = defList.find((d) => d['name'] === name);
      let type = typeof def?.['type'] === 'number' ? def['type'] : undefined;
      type ??=
        typeof value === 'boolean' ? 5 : typeof value === 'number' ? (Number.isInteger(value) ? 4 : 10) : 3;
      const opt: JsonObject = { name, type, value };
      if (focused === name) opt['focused'] = true;
      if (type === 6 && typeof value === 'string') {
        const u = this.#users.get(value);
        if (u) {
          resolved.users[value] = u.user;
          const m = this.#memberJson(u, true);
          delete m['user'];
          resolved.members[value] = m;
        }
      }
      if (type === 7 && typeof value === 'string') {
        const c = this.#channels.get(value);
        if (c)
          resolved.channels[value] = { ...this.#channelJson(c, true), permissions: DEFAULT_BOT_PERMISSIONS };
      }
      out.push(opt);
    }
    for (const [name, ref] of Object.entries(attachments ?? {})) {
      const a = this.#resolveAttachment(ref, channelId);
      const id = String(a['id']);
      resolved.attachments[id] = a;
      out.push({ name, type: 11, value: id });
    }
    return out;
  }

  #commandData(
    input: CommandInput | AutocompleteInput,
    focused: string | undefined,
    channelId: string,
    guildId: string,
  ): JsonObject {
    const registered = this.#registeredCommand(input.name, guildId);
    const resolved = { attachments: {}, users: {}, members: {}, channels: {}, roles: {} } as {
      attachments: JsonObject;
      users: JsonObject;
      members: JsonObject;
      channels: JsonObject;
      roles: JsonObject;
    };
    let defs: Json | undefined = registered?.['options'];
    const findSub = (list: Json | undefined, name: string): JsonObject | undefined =>
      Array.isArray(list) ? list.filter(isObj).find((o) => o['name'] === name) : undefined;
    const groupDef = input.subcommandGroup ? findSub(defs, input.subcommandGroup) : undefined;
    if (input.subcommandGroup) defs = groupDef?.['options'];
    const subDef = input.subcommand ? findSub(defs, input.subcommand) : undefined;
    if (input.subcommand) defs = subDef?.['options'];
    const attachments = 'attachments' in input ? input.attachments : undefined;
    let options = this.#buildOptions(defs, input.options, attachments, focused, resolved, channelId);
    if (input.subcommand) options = [{ type: 1, name: input.subcommand, options }];
    if (input.subcommandGroup) options = [{ type: 2, name: input.subcommandGroup, options }];
    const data: JsonObject = {
      id: typeof registered?.['id'] === 'string' ? registered['id'] : this.#snowflakes.next(),
      name: input.name,
      type: 'commandType' in input && input.commandType !== undefined ? input.commandType : 1,
    };
    if (options.length > 0) data['options'] = options;
    const compact: JsonObject = {};
    for (const [k, v] of Object.entries(resolved)) if (Object.keys(v).length > 0) compact[k] = v;
    if (Object.keys(compact).length > 0) data['resolved'] = compact;
    if (registered && typeof registered['guild_id'] === 'string') data['guild_id'] = registered['guild_id'];
    return data;
  }

  /** Dispatches an APPLICATION_COMMAND interaction (type 2) to the bot. */
  sendCommand(input: CommandInput): InteractionHandle {
    const channelId = input.channelId ?? this.defaultChannelId;
    const data = this.#commandData(input, undefined, channelId, input.guildId ?? this.guildId);
    return this.#dispatchInteraction(this.#interactionBase(InteractionType.ApplicationCommand, data, input));
  }

  /** Dispatches an APPLICATION_COMMAND_AUTOCOMPLETE interaction (type 4); one option is `focused`. */
  sendAutocomplete(input: AutocompleteInput): InteractionHandle {
    const channelId = input.channelId ?? this.defaultChannelId;
    const focused =
      input.focused ??
      (input.options && !Array.isArray(input.options) ? Object.keys(input.options)[0] : undefined);
    const data = this.#commandData(input, focused, channelId, input.guildId ?? this.guildId);
    return this.#dispatchInteraction(this.#interactionBase(InteractionType.Autocomplete, data, input));
  }

  /** Dispatches a MESSAGE_COMPONENT interaction (type 3) for a component on an existing message. */
  sendButton(input: ComponentInput): InteractionHandle {
    return this.sendComponent(input);
  }

  sendComponent(input: ComponentInput): InteractionHandle {
    const msg = this.messages.get(input.messageId);
    if (!msg) throw new Error(`fake-discord: unknown message ${input.messageId}`);
    const data: JsonObject = { custom_id: input.customId, component_type: input.componentType ?? 2 };
    if (input.values) data['values'] = input.values;
    const state = this.#interactionBase(InteractionType.MessageComponent, data, {
      channelId: msg.channelId,
      ...input,
    });
    state.payload['message'] = { ...msg.data };
    state.sourceMessageId = msg.id;
    return this.#dispatchInteraction(state);
  }

  /** Dispatches a MODAL_SUBMIT interaction (type 5). Fields are wrapped in Label (18) components like Discord does. */
  sendModalSubmit(input: ModalSubmitInput): InteractionHandle {
    const channelId = input.channelId ?? this.defaultChannelId;
    const resolvedAttachments: JsonObject = {};
    let nextId = 1;
    const components: Json[] = input.components.map((field): Json => {
      if ('raw' in field) return field.raw;
      const labelId = nextId++;
      const innerId = nextId++;
      let inner: JsonObject;
      if ('value' in field) {
        inner = { type: 4, id: innerId, custom_id: field.customId, value: field.value };
      } else if ('files' in field) {
        const ids = field.files.map((ref) => {
          const a = this.#resolveAttachment(ref, channelId);
          resolvedAttachments[String(a['id'])] = a;
          return String(a['id']);
        });
        inner = { type: 19, id: innerId, custom_id: field.customId, values: ids };
      } else {
        inner = {
          type: field.componentType ?? 3,
          id: innerId,
          custom_id: field.customId,
          values: field.values,
        };
      }
      return { type: 18, id: labelId, component: inner };
    });
    const data: JsonObject = { custom_id: input.customId, components };
    if (Object.keys(resolvedAttachments).length > 0) data['resolved'] = { attachments: resolvedAttachments };
    const state = this.#interactionBase(InteractionType.ModalSubmit, data, { ...input, channelId });
    if (input.messageId) {
      const msg = this.messages.get(input.messageId);
      if (!msg) throw new Error(`fake-discord: unknown message ${input.messageId}`);
      state.payload['message'] = { ...msg.data };
      state.sourceMessageId = msg.id;
    }
    return this.#dispatchInteraction(state);
  }

  /** Handle for an interaction created earlier (e.g. to look at its follow-ups). */
  interaction(id: string): InteractionHandle {
    const state = this.interactions.get(id);
    if (!state) throw new Error(`fake-discord: unknown interaction ${id}`);
    return this.#handle(state);
  }

  // ===========================================================================================
  // HTTP plumbing

  #route(method: string, template: string, auth: 'bot' | 'none', handler: Handler): void {
    this.#routes.push({ method, template, auth, handler });
  }

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', this.baseUrl);
      if (url.pathname.startsWith('/cdn/') || url.pathname.startsWith('/media/')) {
        this.#serveCdn(url, req, res);
        return;
      }
      if (!url.pathname.startsWith(`${API_PREFIX}/`)) {
        this.#send(res, 404, { message: '404: Not Found', code: 0 }, {});
        return;
      }
      await this.#onApiRequest(url, req, res);
    } catch (e) {
      this.#options.debug?.(
        `fake-discord internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
      );
      if (!res.headersSent) this.#send(res, 500, { message: '500: Internal Server Error', code: 0 }, {});
    }
  }

  #send(res: ServerResponse, status: number, body: Json | undefined, headers: Record<string, string>): void {
    if (res.writableEnded) return;
    if (body === undefined || status === 204) {
      res.writeHead(status, headers);
      res.end();
      return;
    }
    if (typeof body === 'string' && status >= 500) {
      res.writeHead(status, { 'Content-Type': 'text/html', ...headers });
      res.end(body);
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(text)),
      ...headers,
    });
    res.end(text);
  }

  async #parseBody(
    req: IncomingMessage,
  ): Promise<{ body: unknown; files: UploadedFile[]; error?: DiscordHttpError }> {
    const raw = await readBody(req);
    const contentType = req.headers['content-type'] ?? '';
    if (raw.length === 0) return { body: undefined, files: [] };
    if (contentType.startsWith('multipart/form-data')) {
      const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
      const files: UploadedFile[] = [];
      let body: unknown = undefined;
      const extra: Record<string, unknown> = {};
      for (const [field, value] of form.entries()) {
        if (typeof value === 'string') {
          if (field === 'payload_json') {
            try {
              body = JSON.parse(value);
            } catch {
              return { body: undefined, files, error: err.invalidJson() };
            }
          } else {
            extra[field] = value;
          }
        } else {
          files.push({
            field,
            filename: value.name,
            contentType: value.type,
            bytes: Buffer.from(await value.arrayBuffer()),
          });
        }
      }
      if (body === undefined && Object.keys(extra).length > 0) body = extra;
      return { body, files };
    }
    try {
      return { body: JSON.parse(raw.toString('utf8')), files: [] };
    } catch {
      return { body: undefined, files: [], error: err.invalidJson() };
    }
  }

  async #onApiRequest(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = url.pathname.slice(API_PREFIX.length);
    const authHeader = req.headers['authorization'];
    const auth: AuthKind =
      authHeader === undefined ? 'none' : authHeader === `Bot ${this.token}` ? 'bot' : 'invalid';
    const parsed = await this.#parseBody(req);
    const match = this.#routeMatcher.match(path);
    const route = match
      ? this.#routes.find((r) => r.template === match.template && r.method === method)
      : undefined;
    const specMatch = this.spec.matchPath(path);
    const inSpec = specMatch !== undefined && this.spec.hasOperation(specMatch.template, method);
    const template = route?.template ?? specMatch?.template ?? null;

    const record: RequestRecord = {
      seq: ++this.#requestSeq,
      method,
      path,
      route: template,
      query: Object.fromEntries(url.searchParams.entries()),
      auth,
      status: 0,
      at: Date.now(),
      clockAt: this.clock.now(),
      body: parsed.body === undefined ? undefined : toJson(parsed.body),
      files: fileSummary(parsed.files),
      inSpec,
      rateLimited: false,
      fault: false,
      response: undefined,
      responseHeaders: {},
    };
    this.requests.push(record);
    if (!inSpec)
      this.unspecifiedRequests.push({ method, path, route: template, handled: route !== undefined });
    this.#options.debug?.(`fake-discord <- ${method} ${path}${url.search}`);

    // Edits of one message at once, tracked from arrival to answer.
    const editKey =
      method === 'PATCH' && route ? this.#editedMessageId(route.template, match?.params ?? {}) : undefined;
    if (editKey !== undefined) {
      const n = (this.#editsInFlight.get(editKey) ?? 0) + 1;
      this.#editsInFlight.set(editKey, n);
      if (n > 1) this.concurrentEdits.push({ messageId: editKey, path, at: Date.now() });
    }
    const finish = (status: number, body: Json | undefined, headers: Record<string, string>): void => {
      if (editKey !== undefined) {
        const left = (this.#editsInFlight.get(editKey) ?? 1) - 1;
        if (left <= 0) this.#editsInFlight.delete(editKey);
        else this.#editsInFlight.set(editKey, left);
      }
      record.status = status;
      record.response = body;
      record.responseHeaders = headers;
      // The spec's InteractionCallbackResponse.resource has no variant for a deferred reply ({type: 5}), which the
      // docs describe; that one response is exempt from the self-check.
      const deferredResource = isObj(body) && isObj(body['resource']) && body['resource']['type'] === 5;
      if (
        this.#options.selfCheckResponses &&
        specMatch &&
        inSpec &&
        body !== undefined &&
        status < 300 &&
        !deferredResource
      ) {
        const errors = this.spec.validateResponseBody(specMatch.template, method, status, body);
        if (errors && errors.length > 0)
          this.responseViolations.push({ method, route: specMatch.template, status, errors });
      }
      this.#send(res, status, body, headers);
      this.#changed();
    };
    const fail = (e: DiscordHttpError, headers: Record<string, string> = {}): void =>
      finish(e.status, e.body, headers);

    if (!route) {
      this.unhandledRequests.push({ method, path, inSpec });
      fail(err.notFound());
      return;
    }
    if (route.auth === 'bot' && auth !== 'bot') {
      fail(err.unauthorized());
      return;
    }
    const ctx: HandlerContext = {
      method,
      path,
      template: route.template,
      params: match?.params ?? {},
      query: url.searchParams,
      auth,
      body: parsed.body,
      files: parsed.files,
      record,
    };

    // 1. rate limits
    const verdict = this.rateLimiter.check({
      method,
      template: route.template,
      params: ctx.params,
      botAuth: auth === 'bot',
    });
    if (verdict.limited) {
      record.rateLimited = true;
      this.rateLimitHits.push({
        source: 'limiter',
        method,
        path,
        route: route.template,
        bucket: verdict.limited.bucket,
        global: verdict.limited.global,
        retryAfterMs: verdict.limited.retryAfterMs,
        at: Date.now(),
      });
      finish(
        429,
        {
          message: 'You are being rate limited.',
          retry_after: Math.round(verdict.limited.retryAfterMs) / 1000,
          global: verdict.limited.global,
        },
        verdict.headers,
      );
      return;
    }

    // 2. body validation against the spec (recorded even if a fault answers)
    let invalid: DiscordHttpError | null = parsed.error ?? null;
    if (!invalid && this.validation !== 'off' && parsed.body !== undefined && specMatch && inSpec) {
      const result = this.spec.validateRequestBody(specMatch.template, method, parsed.body);
      if (result.ok === false) {
        this.violations.push({
          source: 'openapi',
          method,
          path,
          route: specMatch.template,
          operationId: this.spec.operationId(specMatch.template, method),
          errors: result.errors,
          discordErrors: result.discordErrors,
          body: record.body,
          at: Date.now(),
        });
        if (this.validation === 'reject') invalid = err.invalidForm(result.discordErrors);
      } else if (result.ok === true && result.quirks.length > 0) {
        for (const q of result.quirks)
          this.specQuirks.push({ ...q, method, path, route: specMatch.template });
      }
    }

    // 3. injected faults
    const fault = this.#takeFault(method, path, route.template);
    const faultResponse = (): void => {
      if (!fault) return;
      record.fault = true;
      const status = fault.spec.status;
      const body: Json =
        fault.spec.body !== undefined
          ? fault.spec.body
          : status === 429
            ? { message: 'You are being rate limited.', retry_after: 1, global: false }
            : { message: `${status}: Injected fault`, code: 0 };
      const headers: Record<string, string> = { ...verdict.headers, ...(fault.spec.headers ?? {}) };
      if (status === 429) {
        const retryAfter =
          isRecord(body) && typeof body['retry_after'] === 'number' ? body['retry_after'] : 1;
        const global = isRecord(body) && body['global'] === true;
        headers['Retry-After'] ??= String(Math.max(1, Math.ceil(retryAfter)));
        headers['X-RateLimit-Scope'] ??= global ? 'global' : 'user';
        if (global) headers['X-RateLimit-Global'] ??= 'true';
        record.rateLimited = true;
        this.rateLimitHits.push({
          source: 'fault',
          method,
          path,
          route: route.template,
          bucket: headers['X-RateLimit-Bucket'] ?? 'fault',
          global,
          retryAfterMs: retryAfter * 1000,
          at: Date.now(),
        });
      }
      finish(status, body, headers);
    };
    if (fault?.spec.delayMs) await sleep(fault.spec.delayMs);
    if (fault && !fault.spec.afterHandler) {
      faultResponse();
      return;
    }
    if (invalid) {
      fail(invalid, verdict.headers);
      return;
    }

    // 4. the handler (message edits after the configured network latency)
    if (editKey !== undefined && this.#options.editLatencyMs) await sleep(this.#options.editLatencyMs);
    let result: HandlerResult;
    try {
      result = await route.handler(ctx);
    } catch (e) {
      if (e instanceof DiscordHttpError) {
        if (fault) faultResponse();
        else fail(e, verdict.headers);
        return;
      }
      throw e;
    }
    if (fault) {
      faultResponse();
      return;
    }
    finish(result.status, result.body, { ...verdict.headers, ...(result.headers ?? {}) });
  }

  #serveCdn(url: URL, req: IncomingMessage, res: ServerResponse): void {
    const gone = (): void => {
      this.cdnRequests.push({ path: url.pathname, status: 404, at: Date.now() });
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('This content is no longer available.');
    };
    const m = /^\/(?:cdn|media)\/attachments\/(\d+)\/(\d+)\/([^/]+)$/.exec(url.pathname);
    const a = m ? this.attachments.get(m[2] ?? '') : undefined;
    if (!m || !a || decodeURIComponent(m[3] ?? '') !== a.filename) {
      gone();
      return;
    }
    const ex = url.searchParams.get('ex') ?? '';
    const is = url.searchParams.get('is') ?? '';
    const hm = url.searchParams.get('hm') ?? '';
    const expected = createHmac('sha256', this.#cdnSecret).update(`${a.id}:${ex}:${is}`).digest('hex');
    // Unsigned or expired links are refused, like Discord's CDN does since 2024.
    if (hm !== expected || Number.parseInt(ex, 16) * 1000 <= this.clock.now()) {
      gone();
      return;
    }
    this.cdnRequests.push({ path: url.pathname, status: 200, at: Date.now() });
    res.writeHead(200, {
      'Content-Type': a.contentType,
      'Content-Length': String(a.bytes.length),
      'Cache-Control': 'public, max-age=31536000',
    });
    if (req.method === 'HEAD') res.end();
    else res.end(a.bytes);
  }

  // ===========================================================================================
  // REST handlers

  #bodyObject(ctx: HandlerContext): JsonObject {
    if (ctx.body === undefined) return {};
    if (!isRecord(ctx.body))
      throw err.invalidForm(
        fieldError([], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType'),
      );
    return toJson(ctx.body) as JsonObject;
  }

  #channelFor(ctx: HandlerContext, needSend: boolean): ChannelState {
    const channel = this.#channels.get(ctx.params['channel_id'] ?? '');
    if (!channel) throw err.unknownChannel();
    if (!channel.botCanView) throw err.missingAccess();
    if (needSend && !channel.botCanSend) throw err.missingPermissions();
    return channel;
  }

  #channelMessage(ctx: HandlerContext): FakeMessage {
    const msg = this.messages.get(ctx.params['message_id'] ?? '');
    if (!msg || msg.deleted || msg.ephemeral || msg.channelId !== ctx.params['channel_id'])
      throw err.unknownMessage();
    return msg;
  }

  #registerRoutes(): void {
    // --- gateway / identity
    this.#route('GET', '/gateway', 'none', () => ({ status: 200, body: { url: this.gatewayUrl } }));
    this.#route('GET', '/gateway/bot', 'bot', () => ({
      status: 200,
      body: {
        url: this.gatewayUrl,
        shards: 1,
        session_start_limit: {
          total: 1000,
          remaining: 1000 - this.gateway.identifies,
          reset_after: 0,
          max_concurrency: 1,
        },
      },
    }));
    this.#route('GET', '/users/@me', 'bot', () => ({ status: 200, body: this.botUser }));
    this.#route('GET', '/users/{user_id}', 'bot', (ctx) => {
      const u = this.#users.get(ctx.params['user_id'] ?? '');
      if (!u) throw err.unknownUser();
      return { status: 200, body: u.user };
    });
    this.#route('GET', '/applications/@me', 'bot', () => ({ status: 200, body: this.#applicationJson() }));
    this.#route('GET', '/oauth2/applications/@me', 'bot', () => ({
      status: 200,
      body: this.#applicationJson(),
    }));

    // --- guild / channels
    this.#route('GET', '/guilds/{guild_id}', 'bot', (ctx) => {
      if (ctx.params['guild_id'] !== this.guildId) throw err.unknownGuild();
      const g = this.#guildCreatePayload();
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
    this.#route('GET', '/guilds/{guild_id}/channels', 'bot', (ctx) => {
      if (ctx.params['guild_id'] !== this.guildId) throw err.unknownGuild();
      return { status: 200, body: [...this.#channels.values()].map((c) => this.#channelJson(c, true)) };
    });
    this.#route('GET', '/guilds/{guild_id}/members/{user_id}', 'bot', (ctx) => {
      if (ctx.params['guild_id'] !== this.guildId) throw err.unknownGuild();
      const u = this.#users.get(ctx.params['user_id'] ?? '');
      if (!u) throw err.unknownMember();
      return { status: 200, body: this.#memberJson(u, false) };
    });
    this.#route('GET', '/channels/{channel_id}', 'bot', (ctx) => ({
      status: 200,
      body: this.#channelJson(this.#channelFor(ctx, false), true),
    }));
    this.#route('POST', '/channels/{channel_id}/typing', 'bot', (ctx) => {
      this.#channelFor(ctx, true);
      return { status: 204 };
    });

    // --- channel messages
    this.#route('GET', '/channels/{channel_id}/messages', 'bot', (ctx) => {
      const channel = this.#channelFor(ctx, false);
      const limit = Math.min(100, Math.max(1, Number(ctx.query.get('limit') ?? 50) || 50));
      let list = this.channelMessages(channel.id).filter((m) => !m.ephemeral);
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
    this.#route('POST', '/channels/{channel_id}/messages', 'bot', (ctx) => {
      const channel = this.#channelFor(ctx, true);
      const limit = uploadLimitForTier(this.#premiumTier);
      if (ctx.files.some((f) => f.bytes.length > limit)) {
        throw new DiscordHttpError(413, 40005, 'Request entity too large');
      }
      const body = this.#bodyObject(ctx);
      // enforce_nonce: the same author's message with the same nonce within the window is
      // answered again, and nothing new is created.
      const nonce = body['nonce'];
      const nonceKey =
        body['enforce_nonce'] === true && (typeof nonce === 'string' || typeof nonce === 'number')
          ? `${String(this.botUser['id'])}:${String(nonce)}`
          : undefined;
      if (nonceKey !== undefined) {
        for (const [k, v] of this.#nonces)
          if (this.clock.now() - v.at >= NONCE_WINDOW_MS) this.#nonces.delete(k);
        const seen = this.#nonces.get(nonceKey);
        const earlier = seen && this.messages.get(seen.messageId);
        if (earlier) return { status: 200, body: earlier.data };
      }
      if (typeof body['flags'] === 'number' && (body['flags'] & MessageFlag.Ephemeral) !== 0) {
        body['flags'] = body['flags'] & ~MessageFlag.Ephemeral; // Discord ignores EPHEMERAL outside interactions
      }
      const id = this.#snowflakes.next();
      const base = this.#baseMessage(id, channel.id, this.botUser, 0, 0);
      const reference = body['message_reference'];
      if (isRecord(reference) && typeof reference['message_id'] === 'string') {
        base['type'] = 19;
        base['message_reference'] = {
          type: 0,
          channel_id: channel.id,
          message_id: reference['message_id'],
          guild_id: this.guildId,
        };
      }
      const data = this.#applyMessageBody(base, body, ctx.files, 'create', channel.id, false);
      if (typeof body['nonce'] === 'string' || typeof body['nonce'] === 'number')
        data['nonce'] = body['nonce'];
      this.#checkMessageRules(data, ctx, true);
      const msg = new FakeMessage({
        id,
        channelId: channel.id,
        data,
        ephemeral: false,
        createdAt: this.clock.now(),
        interactionId: null,
        source: 'channel',
      });
      this.messages.set(id, msg);
      if (nonceKey !== undefined) this.#nonces.set(nonceKey, { messageId: id, at: this.clock.now() });
      this.#emitMessage('MESSAGE_CREATE', msg);
      return { status: 200, body: data };
    });
    // Start a public thread from a message (Discord: the thread's id is the message's id; one thread per
    // message, 160004; text or announcement channels only, 50024; Create Public Threads, else 50013).
    this.#route('POST', '/channels/{channel_id}/messages/{message_id}/threads', 'bot', (ctx) => {
      const channel = this.#channelFor(ctx, true);
      if (channel.type !== 0 && channel.type !== 5) {
        throw new DiscordHttpError(400, 50024, 'Cannot execute action on this channel type');
      }
      const msg = this.#channelMessage(ctx);
      if (this.#channels.has(msg.id)) {
        throw new DiscordHttpError(400, 160004, 'A thread has already been created for this message');
      }
      const body = this.#bodyObject(ctx);
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
      };
      this.#channels.set(thread.id, thread);
      const json = this.#channelJson(thread, true);
      msg.data['thread'] = json;
      if (this.gateway.currentSession)
        this.gateway.dispatch('THREAD_CREATE', { ...json, newly_created: true });
      return { status: 201, body: json };
    });
    this.#route('GET', '/channels/{channel_id}/messages/{message_id}', 'bot', (ctx) => {
      this.#channelFor(ctx, false);
      return { status: 200, body: this.#channelMessage(ctx).data };
    });
    this.#route('PATCH', '/channels/{channel_id}/messages/{message_id}', 'bot', (ctx) => {
      this.#channelFor(ctx, false);
      const msg = this.#channelMessage(ctx);
      if (msg.authorId !== this.applicationId) throw err.cannotEditOthers();
      const body = this.#bodyObject(ctx);
      this.#checkOldMessageEdit(msg);
      return { status: 200, body: this.#editMessage(msg, ctx, body, 'channel') };
    });
    this.#route('DELETE', '/channels/{channel_id}/messages/{message_id}', 'bot', (ctx) => {
      this.#channelFor(ctx, false);
      const msg = this.#channelMessage(ctx);
      this.#deleteMessage(msg);
      return { status: 204 };
    });
    this.#route('POST', '/attachments/refresh-urls', 'bot', (ctx) => {
      const body = this.#bodyObject(ctx);
      const urls = body['attachment_urls'];
      if (!Array.isArray(urls) || urls.some((u) => typeof u !== 'string')) {
        throw err.invalidForm(
          fieldError(['attachment_urls'], 'BASE_TYPE_REQUIRED', 'This field is required'),
        );
      }
      const refreshed = urls.map((original): Json => {
        const url = String(original);
        const m = /\/attachments\/\d+\/(\d+)\/([^/?]+)/.exec(url);
        const a = m ? this.attachments.get(m[1] ?? '') : undefined;
        return { original: url, refreshed: a ? this.#signCdn(a.id, a.filename, a.channelId).url : url };
      });
      return { status: 200, body: { refreshed_urls: refreshed } };
    });

    // --- interactions
    this.#route('POST', '/interactions/{interaction_id}/{interaction_token}/callback', 'none', (ctx) =>
      this.#interactionCallback(ctx),
    );
    const webhookBase = '/webhooks/{webhook_id}/{webhook_token}';
    this.#route('POST', webhookBase, 'none', (ctx) => this.#followUp(ctx));
    for (const suffix of ['/messages/@original', '/messages/{message_id}']) {
      this.#route('GET', webhookBase + suffix, 'none', (ctx) => ({
        status: 200,
        body: this.#webhookMessage(ctx).data,
      }));
      this.#route('PATCH', webhookBase + suffix, 'none', (ctx) => {
        const msg = this.#webhookMessage(ctx);
        return { status: 200, body: this.#editMessage(msg, ctx, this.#bodyObject(ctx), 'webhook') };
      });
      this.#route('DELETE', webhookBase + suffix, 'none', (ctx) => {
        this.#deleteMessage(this.#webhookMessage(ctx));
        return { status: 204 };
      });
    }

    // --- application commands
    for (const scope of ['global', 'guild'] as const) {
      const base =
        scope === 'global'
          ? '/applications/{application_id}/commands'
          : '/applications/{application_id}/guilds/{guild_id}/commands';
      this.#route('GET', base, 'bot', (ctx) => {
        const list = this.#commandList(ctx);
        const withLoc = ctx.query.get('with_localizations') === 'true';
        return { status: 200, body: list.map((c) => this.#commandOut(c, withLoc)) };
      });
      this.#route('PUT', base, 'bot', (ctx) => this.#bulkOverwrite(ctx));
      this.#route('POST', base, 'bot', (ctx) => this.#createCommand(ctx));
      this.#route('GET', `${base}/{command_id}`, 'bot', (ctx) => ({
        status: 200,
        body: this.#commandOut(this.#findCommand(ctx), true),
      }));
      this.#route('PATCH', `${base}/{command_id}`, 'bot', (ctx) => this.#patchCommand(ctx));
      this.#route('DELETE', `${base}/{command_id}`, 'bot', (ctx) => {
        const list = this.#commandList(ctx);
        const cmd = this.#findCommand(ctx);
        list.splice(list.indexOf(cmd), 1);
        return { status: 204 };
      });
    }
  }

  #checkOldMessageEdit(msg: FakeMessage): void {
    if (this.clock.now() - msg.createdAt <= HOUR) return;
    const used = this.#oldMessageEdits.get(msg.channelId) ?? 0;
    if (used >= (this.#options.oldMessageEditLimit ?? 0)) throw err.oldMessageEdits();
    this.#oldMessageEdits.set(msg.channelId, used + 1);
  }

  #editMessage(msg: FakeMessage, ctx: HandlerContext, body: JsonObject, via: MessageVia): JsonObject {
    const wasLoading = msg.loading;
    const after = this.#applyMessageBody(msg.data, body, ctx.files, 'edit', msg.channelId, msg.ephemeral);
    if (wasLoading)
      after['flags'] = (typeof after['flags'] === 'number' ? after['flags'] : 0) & ~MessageFlag.Loading;
    // Discord does not mark the first edit of a deferred ("thinking…") response as an edit.
    after['edited_timestamp'] = wasLoading ? null : new Date(this.clock.now()).toISOString();
    this.#checkMessageRules(after, ctx, true);
    this.#recordEdit(msg, ctx, via, body, after);
    this.#emitMessage('MESSAGE_UPDATE', msg);
    return after;
  }

  #deleteMessage(msg: FakeMessage): void {
    msg.deleted = true;
    msg.deletedAt = this.clock.now();
    this.#emitMessage('MESSAGE_DELETE', msg);
  }

  // --- interaction callback

  #interactionCallback(ctx: HandlerContext): HandlerResult {
    const state = this.interactions.get(ctx.params['interaction_id'] ?? '');
    if (!state || state.token !== ctx.params['interaction_token']) throw err.unknownInteraction();
    const deadline = this.#options.interactionAckDeadlineMs ?? 3000;
    if (state.callbacks.length > 0) throw err.alreadyAcknowledged();
    if (this.clock.now() - state.createdAt > deadline) throw err.unknownInteraction();
    const body = this.#bodyObject(ctx);
    const type = body['type'];
    const data = isRecord(body['data']) ? (body['data'] as JsonObject) : {};
    const allowed: Record<number, number[]> = {
      [InteractionType.Ping]: [1],
      [InteractionType.ApplicationCommand]: [4, 5, 9, 10, 12],
      [InteractionType.MessageComponent]: [4, 5, 6, 7, 9, 10, 12],
      [InteractionType.Autocomplete]: [8],
      [InteractionType.ModalSubmit]: state.sourceMessageId ? [4, 5, 6, 7, 10] : [4, 5, 10],
    };
    if (typeof type !== 'number' || !(allowed[state.type] ?? []).includes(type)) {
      throw err.invalidForm(
        fieldError(
          ['type'],
          'INTERACTION_RESPONSE_TYPE_INVALID',
          'Interaction response type is invalid for this interaction type',
        ),
      );
    }
    const withResponse = ctx.query.get('with_response') === 'true';
    const record: InteractionCallbackRecord = {
      interactionId: state.id,
      token: state.token,
      type,
      data: isRecord(body['data']) ? data : null,
      withResponse,
      status: 0,
      at: Date.now(),
      clockAt: this.clock.now(),
      files: fileSummary(ctx.files),
    };

    let message: FakeMessage | undefined;
    if (
      type === CallbackType.ChannelMessageWithSource ||
      type === CallbackType.DeferredChannelMessageWithSource
    ) {
      const requestedFlags = typeof data['flags'] === 'number' ? data['flags'] : 0;
      const ephemeral = (requestedFlags & MessageFlag.Ephemeral) !== 0;
      const id = this.#snowflakes.next();
      const msgType =
        state.type === InteractionType.ApplicationCommand
          ? (state.payload['data'] as JsonObject)['type'] === 1
            ? 20
            : 23
          : 19;
      const base = this.#baseMessage(id, state.channelId, this.botUser, msgType, 0);
      base['webhook_id'] = this.applicationId;
      base['application_id'] = this.applicationId;
      base['interaction_metadata'] = this.#interactionMetadata(state, null);
      if (state.type === InteractionType.ApplicationCommand) {
        base['interaction'] = {
          id: state.id,
          type: state.type,
          name: String((state.payload['data'] as JsonObject)['name']),
          user: this.#user(state.userId).user,
        };
      }
      if (state.sourceMessageId && msgType === 19) {
        base['message_reference'] = {
          type: 0,
          channel_id: state.channelId,
          message_id: state.sourceMessageId,
          guild_id: this.guildId,
        };
      }
      let dataOut: JsonObject;
      if (type === CallbackType.DeferredChannelMessageWithSource) {
        dataOut = { ...base, flags: MessageFlag.Loading | (ephemeral ? MessageFlag.Ephemeral : 0) };
      } else {
        dataOut = this.#applyMessageBody(base, data, ctx.files, 'create', state.channelId, ephemeral);
        this.#checkMessageRules(dataOut, ctx, true);
      }
      message = new FakeMessage({
        id,
        channelId: state.channelId,
        data: dataOut,
        ephemeral,
        createdAt: this.clock.now(),
        interactionId: state.id,
        source: 'interaction-response',
      });
      this.messages.set(id, message);
      state.originalMessageId = id;
      this.#emitMessage('MESSAGE_CREATE', message);
    } else if (type === CallbackType.DeferredUpdateMessage || type === CallbackType.UpdateMessage) {
      const source = state.sourceMessageId ? this.messages.get(state.sourceMessageId) : undefined;
      if (!source) throw err.unknownMessage();
      state.originalMessageId = source.id;
      message = source;
      if (type === CallbackType.UpdateMessage) this.#editMessage(source, ctx, data, 'interaction-callback');
    } else if (type === CallbackType.Modal) {
      state.modal = data;
    } else if (type === CallbackType.ApplicationCommandAutocompleteResult) {
      const choices = data['choices'];
      state.choices = Array.isArray(choices) ? choices : [];
    }

    record.status = withResponse ? 200 : 204;
    state.callbacks.push(record);
    this.interactionResponses.push(record);
    if (!withResponse) return { status: 204 };
    const interaction: JsonObject = { id: state.id, type: state.type };
    if (message) {
      interaction['response_message_id'] = message.id;
      interaction['response_message_loading'] = message.loading;
      interaction['response_message_ephemeral'] = message.ephemeral;
    }
    // Discord docs: `resource.message` is only present for CHANNEL_MESSAGE_WITH_SOURCE (4) and UPDATE_MESSAGE (7);
    // a deferred reply (5) reports `{type: 5}` and the loading message via `interaction.response_message_*`.
    // Modals, autocomplete results and deferred updates create no resource.
    const out: JsonObject = { interaction };
    if ((type === CallbackType.ChannelMessageWithSource || type === CallbackType.UpdateMessage) && message) {
      out['resource'] = { type, message: message.data };
    } else if (type === CallbackType.DeferredChannelMessageWithSource) {
      out['resource'] = { type };
    }
    return { status: 200, body: out };
  }

  #interactionMetadata(state: InteractionState, originalResponseId: string | null): JsonObject {
    const user = this.#user(state.userId).user;
    const meta: JsonObject = {
      id: state.id,
      type: state.type,
      user,
      authorizing_integration_owners: { '0': this.guildId },
    };
    if (state.type === InteractionType.ApplicationCommand) {
      const d = state.payload['data'] as JsonObject;
      meta['name'] = String(d['name']);
      meta['command_type'] = typeof d['type'] === 'number' ? d['type'] : 1;
    }
    if (state.sourceMessageId) meta['interacted_message_id'] = state.sourceMessageId;
    if (originalResponseId) meta['original_response_message_id'] = originalResponseId;
    return meta;
  }

  /** Resolves the interaction behind a webhook route, enforcing the 15-minute token lifetime. */
  #webhookInteraction(ctx: HandlerContext): InteractionState {
    if (ctx.params['webhook_id'] !== this.applicationId) throw err.unknownWebhook();
    const token = ctx.params['webhook_token'] ?? '';
    const state = [...this.interactions.values()].find((i) => i.token === token);
    if (!state) throw err.invalidWebhookToken();
    if (this.clock.now() - state.createdAt > (this.#options.interactionTokenTtlMs ?? 15 * 60_000)) {
      throw err.invalidWebhookToken();
    }
    return state;
  }

  /** The message a PATCH edits (channel route or interaction webhook), without any rule checks. */
  #editedMessageId(template: string, params: Record<string, string>): string | undefined {
    if (template === '/channels/{channel_id}/messages/{message_id}') return params['message_id'];
    if (!template.startsWith('/webhooks/{webhook_id}/{webhook_token}/messages/')) return undefined;
    if (!template.endsWith('@original')) return params['message_id'];
    const token = params['webhook_token'];
    const state = [...this.interactions.values()].find((i) => i.token === token);
    return state?.originalMessageId ?? undefined;
  }

  #webhookMessage(ctx: HandlerContext): FakeMessage {
    const state = this.#webhookInteraction(ctx);
    const id = ctx.template.endsWith('@original')
      ? state.originalMessageId
      : (ctx.params['message_id'] ?? '');
    if (!id) {
      if (state.callbacks.length === 0) throw err.unknownWebhook();
      throw err.unknownMessage();
    }
    const msg = this.messages.get(id);
    const belongs = id === state.originalMessageId || state.followUpIds.includes(id);
    if (!msg || msg.deleted || !belongs) throw err.unknownMessage();
    return msg;
  }

  #followUp(ctx: HandlerContext): HandlerResult {
    const state = this.#webhookInteraction(ctx);
    if (state.callbacks.length === 0) throw err.unknownWebhook();
    const body = this.#bodyObject(ctx);
    const original = state.originalMessageId ? this.messages.get(state.originalMessageId) : undefined;
    // Discord: after a deferred reply, the first follow-up fills in the "thinking…" message instead of creating one.
    if (original && original.loading && !original.deleted) {
      return { status: 200, body: this.#editMessage(original, ctx, body, 'webhook') };
    }
    const requestedFlags = typeof body['flags'] === 'number' ? body['flags'] : 0;
    const ephemeral = (requestedFlags & MessageFlag.Ephemeral) !== 0;
    const id = this.#snowflakes.next();
    const base = this.#baseMessage(
      id,
      state.channelId,
      this.botUser,
      state.type === InteractionType.ApplicationCommand ? 20 : 0,
      0,
    );
    base['webhook_id'] = this.applicationId;
    base['application_id'] = this.applicationId;
    base['interaction_metadata'] = this.#interactionMetadata(state, state.originalMessageId);
    if (state.originalMessageId) {
      base['message_reference'] = {
        type: 0,
        channel_id: state.channelId,
        message_id: state.originalMessageId,
        guild_id: this.guildId,
      };
    }
    const data = this.#applyMessageBody(base, body, ctx.files, 'create', state.channelId, ephemeral);
    this.#checkMessageRules(data, ctx, true);
    const msg = new FakeMessage({
      id,
      channelId: state.channelId,
      data,
      ephemeral,
      createdAt: this.clock.now(),
      interactionId: state.id,
      source: 'interaction-followup',
    });
    this.messages.set(id, msg);
    state.followUpIds.push(id);
    this.#emitMessage('MESSAGE_CREATE', msg);
    return { status: 200, body: data };
  }

  // --- commands

  #countCommandCall(method: string): void {
    this.commandCalls[method] = (this.commandCalls[method] ?? 0) + 1;
  }

  #commandList(ctx: HandlerContext): JsonObject[] {
    this.#countCommandCall(ctx.method);
    if (ctx.params['application_id'] !== this.applicationId) throw err.missingAccess();
    const guildId = ctx.params['guild_id'];
    if (guildId === undefined) return this.commands.global;
    if (guildId !== this.guildId) throw err.missingAccess();
    let list = this.commands.guilds.get(guildId);
    if (!list) {
      list = [];
      this.commands.guilds.set(guildId, list);
    }
    return list;
  }

  #findCommand(ctx: HandlerContext): JsonObject {
    const cmd = this.#commandList(ctx).find((c) => c['id'] === ctx.params['command_id']);
    if (!cmd) throw err.unknownCommand();
    return cmd;
  }

  /** Shape a stored command like Discord returns it. */
  #commandOut(cmd: JsonObject, withLocalizations: boolean): JsonObject {
    const out = { ...cmd };
    if (!withLocalizations) {
      delete out['name_localizations'];
      delete out['description_localizations'];
    }
    return out;
  }

  /** Validates and normalizes one command definition; throws 50035 on rules the spec cannot express. */
  #normalizeCommand(
    input: JsonObject,
    guildId: string | undefined,
    existing: JsonObject | undefined,
    path: string[],
  ): JsonObject {
    const type = typeof input['type'] === 'number' ? input['type'] : 1;
    const name = typeof input['name'] === 'string' ? input['name'] : '';
    if (
      type === 1 &&
      (!/^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u.test(name) || name !== name.toLowerCase())
    ) {
      throw err.invalidForm(
        fieldError([...path, 'name'], 'APPLICATION_COMMAND_INVALID_NAME', `Command name is invalid`),
      );
    }
    const description = typeof input['description'] === 'string' ? input['description'] : '';
    if (type === 1 && description.length === 0) {
      throw err.invalidForm(
        fieldError([...path, 'description'], 'BASE_TYPE_REQUIRED', 'This field is required'),
      );
    }
    const perms = input['default_member_permissions'];
    const definition: JsonObject = {
      type,
      name,
      description: type === 1 ? description : '',
      default_member_permissions: perms === null || perms === undefined ? null : String(perms),
      nsfw: input['nsfw'] === true,
      contexts: Array.isArray(input['contexts']) ? input['contexts'] : null,
      integration_types: Array.isArray(input['integration_types']) ? input['integration_types'] : [0],
    };
    if (guildId === undefined) definition['dm_permission'] = input['dm_permission'] !== false;
    if (Array.isArray(input['options']) && input['options'].length > 0)
      definition['options'] = stripNulls(input['options']);
    if (isRecord(input['name_localizations']))
      definition['name_localizations'] = input['name_localizations'] as JsonObject;
    else definition['name_localizations'] = null;
    if (isRecord(input['description_localizations']))
      definition['description_localizations'] = input['description_localizations'] as JsonObject;
    else definition['description_localizations'] = null;
    if (typeof input['handler'] === 'number') definition['handler'] = input['handler'];

    const comparable = (c: JsonObject): string => {
      const copy: JsonObject = { ...c };
      for (const k of ['id', 'application_id', 'version', 'guild_id']) delete copy[k];
      return JSON.stringify(copy, Object.keys(copy).sort());
    };
    const changed = !existing || comparable(existing) !== comparable(definition);
    const out: JsonObject = {
      id: typeof existing?.['id'] === 'string' ? existing['id'] : this.#snowflakes.next(),
      application_id: this.applicationId,
      version:
        !changed && typeof existing?.['version'] === 'string' ? existing['version'] : this.#snowflakes.next(),
      ...definition,
    };
    if (guildId !== undefined) out['guild_id'] = guildId;
    return out;
  }

  #bulkOverwrite(ctx: HandlerContext): HandlerResult {
    const list = this.#commandList(ctx);
    const body = ctx.body === null ? [] : ctx.body;
    if (!Array.isArray(body))
      throw err.invalidForm(fieldError([], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType'));
    const guildId = ctx.params['guild_id'];
    const seen = new Set<string>();
    const next: JsonObject[] = body.map((raw, i) => {
      if (!isRecord(raw))
        throw err.invalidForm(
          fieldError([String(i)], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType'),
        );
      const input = toJson(raw) as JsonObject;
      const key = `${String(input['type'] ?? 1)}:${String(input['name'])}`;
      if (seen.has(key)) {
        throw err.invalidForm(
          fieldError(
            [String(i), 'name'],
            'APPLICATION_COMMANDS_DUPLICATE_NAME',
            `Application command names must be unique`,
          ),
        );
      }
      seen.add(key);
      const existing = list.find(
        (c) => c['name'] === input['name'] && (c['type'] ?? 1) === (input['type'] ?? 1),
      );
      return this.#normalizeCommand(input, guildId, existing, [String(i)]);
    });
    list.splice(0, list.length, ...next);
    return { status: 200, body: list.map((c) => this.#commandOut(c, true)) };
  }

  #createCommand(ctx: HandlerContext): HandlerResult {
    const list = this.#commandList(ctx);
    const input = this.#bodyObject(ctx);
    const existing = list.find(
      (c) => c['name'] === input['name'] && (c['type'] ?? 1) === (input['type'] ?? 1),
    );
    const cmd = this.#normalizeCommand(input, ctx.params['guild_id'], existing, []);
    if (existing) list.splice(list.indexOf(existing), 1, cmd);
    else list.push(cmd);
    return { status: existing ? 200 : 201, body: this.#commandOut(cmd, true) };
  }

  #patchCommand(ctx: HandlerContext): HandlerResult {
    const list = this.#commandList(ctx);
    const cmd = list.find((c) => c['id'] === ctx.params['command_id']);
    if (!cmd) throw err.unknownCommand();
    const patch = this.#bodyObject(ctx);
    const merged = this.#normalizeCommand({ ...cmd, ...patch }, ctx.params['guild_id'], cmd, []);
    list.splice(list.indexOf(cmd), 1, merged);
    return { status: 200, body: this.#commandOut(merged, true) };
  }
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = new FakeDiscord(options);
  await fake.listen();
  return fake;
}
