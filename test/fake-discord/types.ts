import type { FakeClock } from './clock.js';
import type { Json, JsonObject } from './json.js';
import type { AppliedQuirk, SpecError } from './openapi.js';
import type { RateLimitConfig } from './ratelimit.js';

export interface FakeChannelOptions {
  id?: string;
  name: string;
  /** Discord channel type; 0 = GUILD_TEXT (default), 5 = GUILD_ANNOUNCEMENT, 2 = GUILD_VOICE, 4 = GUILD_CATEGORY. */
  type?: number;
  topic?: string | null;
  parentId?: string | null;
  /** Bot permissions in this channel: can it see it (50001 otherwise) / send in it (50013 otherwise). */
  botCanView?: boolean;
  botCanSend?: boolean;
}

export interface ForumTagInput {
  name: string;
  /** Only members with Manage Threads may apply it. */
  moderated?: boolean;
  emojiName?: string;
  emojiId?: string;
}

/** A forum (type 15) or, with `media`, a media channel (type 16): only posts (threads) live in it. */
export interface ForumChannelOptions {
  name: string;
  tags?: Array<string | ForumTagInput>;
  /** Channel flag REQUIRE_TAG (1 << 4): a post needs at least one tag (40067). */
  requireTag?: boolean;
  media?: boolean;
  /** Default: the first guild. */
  guildId?: string;
  topic?: string;
  botCanSend?: boolean;
}

export interface FakeGuildOptions {
  id?: string;
  name?: string;
  locale?: string;
  channels?: FakeChannelOptions[];
  ownerId?: string;
  /**
   * false: a server that never installed the app. The bot is no member there: it gets no
   * GUILD_CREATE nor messages, and any bot-token request to the guild or its channels is
   * answered 403 50001 Missing Access. Members reach the app there only through their own
   * install (`userInstall: true`). Default true.
   */
  botInstalled?: boolean;
  /**
   * false: the server disallows external apps (members lack USE_EXTERNAL_APPS): Discord forces
   * the answers of a user-installed app that the server did not install to be ephemeral.
   * Default true.
   */
  externalApps?: boolean;
}

export interface FakeUserOptions {
  id?: string;
  username: string;
  globalName?: string | null;
  /** Guild-level permissions of this member (stringified bitfield), default: SEND_MESSAGES|VIEW_CHANNEL|… */
  permissions?: string;
  roles?: string[];
}

export type ValidationMode = 'reject' | 'record' | 'off';

export interface FakeDiscordOptions {
  /** Bot token the fake accepts (`Authorization: Bot <token>` and gateway IDENTIFY). */
  token?: string;
  applicationId?: string;
  botUsername?: string;
  guild?: FakeGuildOptions;
  /** Users that can invoke interactions; the first one is the default invoker. */
  users?: FakeUserOptions[];
  /** `true` = Discord-like defaults; an object overrides parts of the config. Default: off. */
  rateLimits?: boolean | Partial<RateLimitConfig>;
  /** What to do with request bodies that violate the OpenAPI spec: answer 400 50035 (default), only record, or skip. */
  validation?: ValidationMode;
  /** Also validate the fake's own JSON responses against the spec's response schemas (records `responseViolations`). */
  selfCheckResponses?: boolean;
  /** Base clock (default: Date.now). `advanceTime()` adds an offset on top of it. */
  clock?: FakeClock;
  /** Start "now" at this epoch ms instead of the base clock's time. */
  startTime?: number;
  /** How long (fake clock) after its socket closed a gateway session can be resumed. Default 90 s. */
  gatewayResumeWindowMs?: number;
  /**
   * Gateway HELLO heartbeat interval. Default Discord's 41250 ms. Keep it longer than any event-loop stall a
   * test can meet: a client whose ACK is still unread when its next beat is due calls the connection a zombie
   * and reconnects, which a 1 s interval under load did. To see a heartbeat, `requestGatewayHeartbeat()`.
   */
  heartbeatIntervalMs?: number;
  /**
   * Gateway transport compression. 'honor' (default): zlib-stream when the URL asks for it (@discordjs/ws does
   * only if zlib-sync is installed) and per-payload zlib when IDENTIFY says `compress: true`. 'ignore': always
   * plain text frames, which @discordjs/ws accepts either way (it JSON-parses any text frame).
   */
  gatewayCompression?: 'honor' | 'ignore';
  /**
   * How interactions reach the bot: over the gateway (default) or POSTed, Ed25519-signed, to
   * `interactionsUrl` (the bot's `POST /interactions`; see `setInteractionsMode`, `publicKey`).
   */
  interactions?: 'gateway' | 'http';
  interactionsUrl?: string;
  /**
   * Reproduce discord-api-docs #8611 (default on): GET /channels/{id}/messages answers 500 when
   * any message in the channel has a Container (type 17) component; GET of one message works.
   */
  containerListBug?: boolean;
  /** Initial interaction response must arrive within this time (Discord: 3 s), else 404 10062. */
  interactionAckDeadlineMs?: number;
  /** Interaction token lifetime (Discord: 15 min), else 401 50027. */
  interactionTokenTtlMs?: number;
  /** Message edits (PATCH, either route) are answered this much later, like Discord's latency. Default 0. */
  editLatencyMs?: number;
  /** How many edits Discord tolerates on messages older than 1 h before 30046. Default 0. */
  oldMessageEditLimit?: number;
  /** Path of the OpenAPI document. Default: test/fixtures/discord-openapi.json. */
  specPath?: string;
  /** Compile the request validators for the usual bot routes at start (about 0.5 s) instead of on first use. */
  warmUpValidators?: boolean;
  host?: string;
  port?: number;
  debug?: (line: string) => void;
}

export type AuthKind = 'bot' | 'none' | 'invalid';

export interface UploadedFile {
  field: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

export interface RequestRecord {
  seq: number;
  method: string;
  /** Path after `/api/v10`, without query. */
  path: string;
  /** Route template (spec style), or null when no route matched. */
  route: string | null;
  query: Record<string, string>;
  auth: AuthKind;
  status: number;
  /** Real time (ms) the request arrived. */
  at: number;
  /** Fake-clock time the request arrived. */
  clockAt: number;
  body: Json | undefined;
  files: Array<Omit<UploadedFile, 'bytes'> & { size: number }>;
  inSpec: boolean;
  rateLimited: boolean;
  fault: boolean;
  response: Json | undefined;
  /** Headers the fake added (rate-limit headers, Retry-After, …). */
  responseHeaders: Record<string, string>;
}

export interface Violation {
  source: 'openapi' | 'semantic';
  method: string;
  path: string;
  route: string | null;
  operationId: string | undefined;
  errors: SpecError[];
  discordErrors: JsonObject;
  body: Json | undefined;
  at: number;
}

export interface SpecQuirkRecord extends AppliedQuirk {
  method: string;
  path: string;
  route: string;
}

export interface ResponseViolation {
  method: string;
  route: string;
  status: number;
  errors: SpecError[];
}

export interface RateLimitHit {
  source: 'limiter' | 'fault';
  method: string;
  path: string;
  route: string | null;
  bucket: string;
  global: boolean;
  retryAfterMs: number;
  at: number;
}

export interface FaultSpec {
  method?: string;
  /** Route template (`/channels/{channel_id}/messages`), concrete path, or a RegExp tested against both. */
  route?: string | RegExp;
  status: number;
  /** JSON body; a string is sent as text/html (e.g. a Cloudflare 502 page). Default: a Discord-like error. */
  body?: Json;
  headers?: Record<string, string>;
  /** How many matching requests fail (default 1; Infinity for all). */
  count?: number;
  /** Run the real handler first (the side effect happens), then answer with the fault. */
  afterHandler?: boolean;
  /** Delay the response by this many ms. */
  delayMs?: number;
}

export interface FaultHandle {
  readonly id: number;
  readonly spec: FaultSpec;
  /** Requests this fault has answered so far. */
  readonly hits: number;
  readonly remaining: number;
  remove(): void;
}

export interface InteractionCallbackRecord {
  interactionId: string;
  token: string;
  /** Interaction callback type: 1 PONG, 4 message, 5 deferred message, 6 deferred update, 7 update, 8 autocomplete, 9 modal. */
  type: number;
  data: Json;
  withResponse: boolean;
  status: number;
  at: number;
  clockAt: number;
  files: Array<Omit<UploadedFile, 'bytes'> & { size: number }>;
}

export type MessageVia = 'channel' | 'webhook' | 'interaction-callback';

export interface MessageEdit {
  at: number;
  clockAt: number;
  method: string;
  route: string;
  via: MessageVia;
  body: JsonObject;
  before: JsonObject;
  after: JsonObject;
}

export interface StoredAttachment {
  id: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
  channelId: string;
  ephemeral: boolean;
}

export interface AttachmentInput {
  filename: string;
  contentType?: string;
  bytes: Buffer | Uint8Array | string;
  description?: string;
  /** Ephemeral attachments are what Discord creates for interaction uploads. Default true for interaction inputs. */
  ephemeral?: boolean;
  width?: number;
  height?: number;
}

/** An attachment registered with `addAttachment` (or the id of one). */
export type AttachmentRef = string | AttachmentInput;

export interface InteractionCommonInput {
  userId?: string;
  /** Default: the guild's first text channel (the DM channel with `dm`). */
  channelId?: string;
  /** Another guild the bot is in (`addGuild`); the user must be a member there. Default: the first guild. */
  guildId?: string;
  /** From the user's DM with the bot: no guild, `user` instead of `member`, `context: 1`. */
  dm?: boolean;
  /** The user's client locale (`locale`); default `en-US`. */
  locale?: string;
  /** Bot permissions in the channel (stringified bitfield). */
  appPermissions?: string;
  /**
   * The member's own install of the app brought the interaction: `authorizing_integration_owners`
   * carries USER_INSTALL ("1": the user), beside GUILD_INSTALL only where the server installed it.
   * Required in a guild that never installed the app, and in a group DM.
   */
  userInstall?: boolean;
  /** From a group DM (context 2) the user is in, with other users; needs `userInstall`. */
  groupDm?: boolean;
}

export type CommandOptionValue = string | number | boolean;

export interface RawCommandOption {
  name: string;
  type: number;
  value?: CommandOptionValue;
  focused?: boolean;
  options?: RawCommandOption[];
}

export interface CommandInput extends InteractionCommonInput {
  name: string;
  subcommandGroup?: string;
  subcommand?: string;
  /**
   * Option values. Types come from the command registered with the fake (PUT/POST), else are inferred
   * (string → STRING, integer → INTEGER, other number → NUMBER, boolean → BOOLEAN). Raw options are passed through.
   */
  options?: Record<string, CommandOptionValue> | RawCommandOption[];
  /** ATTACHMENT options: option name → attachment (registered id or inline input). */
  attachments?: Record<string, AttachmentRef>;
  /** Command type: 1 CHAT_INPUT (default). */
  commandType?: number;
}

/** A message context-menu command (type 3) on a message (Apps → name, on a right-click). */
export interface MessageCommandInput {
  name: string;
  /** The message right-clicked; the interaction happens in its channel. */
  targetMessageId: string;
  userId?: string;
  /** Must be the target message's guild (for an assertion; the message decides). */
  guildId?: string;
  locale?: string;
  appPermissions?: string;
  /** Through the member's own install (see InteractionCommonInput.userInstall). */
  userInstall?: boolean;
}

export interface AutocompleteInput extends InteractionCommonInput {
  name: string;
  subcommandGroup?: string;
  subcommand?: string;
  options?: Record<string, CommandOptionValue> | RawCommandOption[];
  /** Name of the focused option (when `options` is a record). */
  focused?: string;
}

export interface ComponentInput extends InteractionCommonInput {
  customId: string;
  /** The message the component is on (must exist in the fake). */
  messageId: string;
  /** Component type: 2 button (default), 3 string select, 5 user select, … */
  componentType?: number;
  values?: string[];
}

export type ModalFieldInput =
  | { customId: string; value: string }
  | { customId: string; files: AttachmentRef[] }
  | { customId: string; values: string[]; componentType?: number }
  | { raw: JsonObject };

export interface ModalSubmitInput extends InteractionCommonInput {
  customId: string;
  /** Fields as Discord submits them: each field wrapped in a Label (type 18) component. */
  components: ModalFieldInput[];
  /** If the modal was opened from a component on a message. */
  messageId?: string;
}

export interface FakeAttachment {
  id: string;
  filename: string;
  size: number;
  content_type: string;
  url: string;
  proxy_url: string;
}
