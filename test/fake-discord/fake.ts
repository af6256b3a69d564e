import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addAttachment } from './attachments.js';
import type { AutoModBlock } from './automod.js';
import type { OffsetClock } from './clock.js';
import { setCommandPermission } from './command-access.js';
import { FaultBook } from './faults.js';
import type { FakeGateway } from './gateway.js';
import {
  deliverOverHttp,
  postRawInteraction,
  sendPing,
  type HttpDelivery,
  type InteractionSigner,
  type PostOptions,
} from './http-interactions.js';
import type { JsonObject } from './json.js';
import type { FakeMessage } from './messages.js';
import { OpenApiSpec } from './openapi.js';
import type { RateLimitConfig, RateLimiter } from './ratelimit.js';
import { threads, type ThreadInfo } from './thread-state.js';
import { channelMessages, postUserMessage, type UserMessageInput } from './routes/messages.js';
import { USUAL_BOT_ROUTES, createFakeServer } from './server.js';
import { FakeState, type ForumTag, type InteractionState } from './state.js';
import type {
  AttachmentInput,
  AutocompleteInput,
  CommandInput,
  ComponentInput,
  FakeAttachment,
  FakeDiscordOptions,
  FakeGuildOptions,
  FakeUserOptions,
  ForumChannelOptions,
  FaultHandle,
  FaultSpec,
  InteractionCallbackRecord,
  MessageCommandInput,
  ModalSubmitInput,
  RateLimitHit,
  RequestRecord,
  ResponseViolation,
  SpecQuirkRecord,
  StoredAttachment,
  ValidationMode,
  Violation,
} from './types.js';
import {
  interactionHandle,
  sendAutocomplete,
  sendCommand,
  sendComponent,
  sendMessageCommand,
  sendModalSubmit,
  type InteractionHandle,
} from './user-interactions.js';

export { DiscordErrors } from './errors.js';
import { violationReport } from './errors.js';
export { CallbackType, InteractionType, NONCE_WINDOW_MS } from './constants.js';
export type { InteractionHandle } from './user-interactions.js';
export type { InteractionState, ForumTag } from './state.js';
export type { ThreadInfo } from './thread-state.js';
/** A forum post as `forumPosts` lists it. */
export type ForumPost = ThreadInfo;
export type { AutoModBlock } from './automod.js';

/**
 * The fake Discord: REST v10, gateway, CDN and HTTP interactions on 127.0.0.1. This class is
 * the facade tests use; the route families live in `routes/` and share one `FakeState`.
 */
export class FakeDiscord {
  // --- identity & config
  readonly token: string;
  readonly applicationId: string;
  readonly botUser: JsonObject;
  readonly guildId: string;
  readonly guildName: string;
  readonly validation: ValidationMode;
  readonly spec: OpenApiSpec;

  // --- recorded state (read these in assertions)
  /** All stored messages by id (channel messages, interaction responses, follow-ups, ephemeral ones too). */
  readonly messages: Map<string, FakeMessage>;
  /** Every API request, in arrival order. */
  readonly requests: RequestRecord[];
  /** Request bodies that violate the OpenAPI spec (or Discord rules the spec cannot express). */
  readonly violations: Violation[];
  /** Requests to paths/methods that are not in the OpenAPI spec. */
  readonly unspecifiedRequests: Array<{
    method: string;
    path: string;
    route: string | null;
    handled: boolean;
  }>;
  /** Requests the fake has no handler for (answered 404 `{code: 0}`): a gap in the fake, or a wrong path. */
  readonly unhandledRequests: Array<{ method: string; path: string; inSpec: boolean }>;
  /**
   * Bot-token requests to a guild that never installed the app, or to its channels (answered
   * 403 50001 Missing Access): a bot doing only what user installs allow has none.
   */
  readonly outsiderRequests: Array<{ method: string; path: string; guildId: string }>;
  /** Bodies that only passed thanks to a documented spec quirk (see SPEC_QUIRKS in openapi.ts). */
  readonly specQuirks: SpecQuirkRecord[];
  /** Fake's own responses that do not match the spec (only with `selfCheckResponses`). */
  readonly responseViolations: ResponseViolation[];
  /** Every interaction callback (POST /interactions/{id}/{token}/callback), in order. */
  readonly interactionResponses: InteractionCallbackRecord[];
  readonly interactions: Map<string, InteractionState>;
  /** Every 429 sent (by the limiter or an injected fault). */
  readonly rateLimitHits: RateLimitHit[];
  /**
   * Message edits that arrived while another edit of the same message was still being
   * answered (several bot instances must never edit one message at once).
   */
  readonly concurrentEdits: Array<{ messageId: string; path: string; at: number }>;
  /** Registered application commands: global and per guild. */
  readonly commands: { global: JsonObject[]; guilds: Map<string, JsonObject[]> };
  /** Command-route calls per HTTP method (global + guild scopes), e.g. `{ GET: 1, PUT: 1 }`. */
  readonly commandCalls: Record<string, number>;
  readonly attachments: Map<string, StoredAttachment>;
  readonly cdnRequests: Array<{ path: string; status: number; at: number }>;

  readonly gateway: FakeGateway;
  /** HTTP interactions (`interactions: 'http'`): the application's key pair and signed deliveries. */
  readonly signer: InteractionSigner;
  /** Every HTTP interaction delivery and what the bot answered, in order. */
  readonly httpDeliveries: HttpDelivery[];
  readonly rateLimiter: RateLimiter;
  readonly clock: OffsetClock;

  readonly #state: FakeState;
  readonly #faults = new FaultBook();
  readonly #server: Server;
  #closed = false;

  constructor(options: FakeDiscordOptions = {}, spec?: OpenApiSpec) {
    const s = new FakeState(options, spec ?? OpenApiSpec.load(options.specPath));
    this.#state = s;
    this.token = s.token;
    this.applicationId = s.applicationId;
    this.botUser = s.botUser;
    this.guildId = s.guildId;
    this.guildName = s.guild(s.guildId).name;
    this.validation = s.validation;
    this.spec = s.spec;
    this.messages = s.messages;
    this.requests = s.requests;
    this.violations = s.violations;
    this.unspecifiedRequests = s.unspecifiedRequests;
    this.unhandledRequests = s.unhandledRequests;
    this.outsiderRequests = s.outsiderRequests;
    this.specQuirks = s.specQuirks;
    this.responseViolations = s.responseViolations;
    this.interactionResponses = s.interactionResponses;
    this.interactions = s.interactions;
    this.rateLimitHits = s.rateLimitHits;
    this.concurrentEdits = s.concurrentEdits;
    this.commands = s.commands;
    this.commandCalls = s.commandCalls;
    this.attachments = s.attachments;
    this.cdnRequests = s.cdnRequests;
    this.gateway = s.gateway;
    this.signer = s.signer;
    this.httpDeliveries = s.httpDeliveries;
    this.rateLimiter = s.rateLimiter;
    this.clock = s.clock;

    this.#server = createFakeServer(s, this.#faults);
  }

  // ===========================================================================================
  // Lifecycle

  async listen(): Promise<void> {
    const s = this.#state;
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(s.options.port ?? 0, s.host, () => resolve());
    });
    s.port = (this.#server.address() as AddressInfo).port;
    if (s.options.warmUpValidators) this.spec.warmUp(USUAL_BOT_ROUTES);
  }

  /** Closes sockets, the HTTP server and rejects pending waits, so the test process can exit. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.gateway.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#state.changes.close();
  }

  get port(): number {
    return this.#state.port;
  }

  /** `http://127.0.0.1:PORT` */
  get baseUrl(): string {
    return this.#state.baseUrl;
  }

  /** Pass as `rest: { api }` to discord.js (it appends `/v10`). */
  get apiUrl(): string {
    return `${this.baseUrl}/api`;
  }

  get gatewayUrl(): string {
    return this.#state.gatewayUrl;
  }

  get cdnUrl(): string {
    return `${this.baseUrl}/cdn`;
  }

  get defaultChannelId(): string {
    return this.#state.defaultChannelId;
  }

  get channelIds(): string[] {
    return [...this.#state.channels.keys()];
  }

  channelIdByName(name: string): string {
    for (const c of this.#state.channels.values()) if (c.name === name) return c.id;
    throw new Error(`fake-discord: no channel named ${name}`);
  }

  get defaultUserId(): string {
    return this.#state.defaultUserId;
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
    this.#state.changed();
  }

  /** Channels and threads, for a client listing them (the playground). */
  channelList(): {
    id: string;
    name: string;
    type: number;
    parentId: string | null;
    /** The guild it is in; null for a DM or a group DM. */
    guildId: string | null;
  }[] {
    return [...this.#state.channels.values()].map((c) => ({
      id: c.id,
      name: c.name,
      type: c.type,
      parentId: c.parentId,
      guildId: c.guildId,
    }));
  }

  /** A user's display name (global name, else username). */
  userName(id: string): string {
    const u = this.#state.users.get(id)?.user;
    return String(u?.['global_name'] ?? u?.['username'] ?? id);
  }

  /** Who sent an interaction (null for unknown ids). */
  interactionUser(interactionId: string | null): string | null {
    return interactionId === null ? null : (this.interactions.get(interactionId)?.userId ?? null);
  }

  /** Calls `listener` after every state change (messages, channels, interactions); returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    return this.#state.changes.onChange(listener);
  }

  /** Resolves with the first truthy value of `check()`, re-evaluated on every state change and every 20 ms. */
  waitFor<T>(
    check: () => T | undefined | null | false,
    options: { timeoutMs?: number; description?: string } = {},
  ): Promise<T> {
    return this.#state.changes.waitFor(check, options);
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

  /** Sends op 1 HEARTBEAT; the client answers with a heartbeat at once, whatever its interval. */
  requestGatewayHeartbeat(): void {
    this.gateway.requestHeartbeat();
  }

  /** Sends op 7 RECONNECT. */
  requestGatewayReconnect(): void {
    this.gateway.requestReconnect();
  }

  /** Gateway IDENTIFYs accepted so far (a new session each). */
  get identifyCount(): number {
    return this.gateway.identifies;
  }

  /** Successful gateway RESUMEs so far (from the same client or another process). */
  get resumeCount(): number {
    return this.gateway.resumes;
  }

  /** RESUMEs refused with op 9 `d: false` (expired, ended or unknown session, or a sequence never sent). */
  get resumeRefusalCount(): number {
    return this.gateway.resumeRefusals;
  }

  /** Ends every gateway session that has no socket, as if the resume window had passed. */
  expireGatewaySessions(): void {
    this.gateway.expireDisconnectedSessions();
  }

  /** Sends op 9 INVALID_SESSION. */
  invalidateGatewaySession(resumable = false): void {
    this.gateway.invalidateSession(resumable);
  }

  /** Turns rate limiting on/off; `config` overrides the limits given at start (not the previous call's). */
  setRateLimits(on: boolean, config?: Partial<RateLimitConfig>): void {
    this.rateLimiter.enabled = on;
    this.rateLimiter.config = { ...this.#state.initialRateLimits, ...(config ?? {}) };
    this.rateLimiter.reset();
  }

  get count429(): number {
    return this.rateLimitHits.length;
  }

  /** Makes the next `count` matching requests fail with the given status/body. */
  injectFault(spec: FaultSpec): FaultHandle {
    return this.#faults.inject(spec);
  }

  clearFaults(): void {
    this.#faults.clear();
  }

  /** Returns the violations recorded so far and forgets them (for tests that provoke one on purpose). */
  takeViolations(): Violation[] {
    return this.violations.splice(0, this.violations.length);
  }

  /** Throws with a readable list if any request violated the spec (or a Discord rule). */
  assertNoViolations(): void {
    if (this.violations.length > 0) throw new Error(violationReport(this.violations));
  }

  // ===========================================================================================
  // Guild, users, attachments, messages from users

  /** Guild boost level: the upload limit per file (Discord: 10 MiB, 50 MiB at tier 2, 100 MiB at tier 3). */
  setGuildPremiumTier(tier: 0 | 1 | 2 | 3, guildId: string = this.guildId): void {
    this.#state.guild(guildId).premiumTier = tier;
  }

  /** The first guild's preferred locale (its interactions' `guild_locale`). */
  get guildLocale(): string {
    return this.#state.guild(this.guildId).locale;
  }

  /** A guild's preferred locale: every interaction from it carries it as `guild_locale`. */
  setGuildLocale(guildId: string, locale: string): void {
    this.#state.guild(guildId).locale = locale;
  }

  /** Adds a user; they are a member of the first guild (with `permissions`/`roles` there). */
  addUser(u: FakeUserOptions): string {
    return this.#state.addUser(u);
  }

  /**
   * Another guild the bot is in (its own channels, members and commands); a connected bot gets
   * its GUILD_CREATE. Returns the guild id. Users join it with `addMember`.
   */
  addGuild(options: FakeGuildOptions = {}): string {
    return this.#state.addGuild(options);
  }

  /** Whether the bot may send in a channel from now on (a changed overwrite: sends then fail 50013). */
  setBotCanSend(channelId: string, canSend: boolean): void {
    const c = this.#state.channels.get(channelId);
    if (!c) throw new Error(`fake-discord: unknown channel ${channelId}`);
    c.botCanSend = canSend;
  }

  /**
   * A member's permissions in one channel (what the channel's overwrites make of them), as
   * Discord computes them for a channel an interaction resolves (`resolved.channels[id].permissions`).
   */
  setChannelPermissions(channelId: string, userId: string, permissions: string): void {
    this.#state.channelPermissions.set(`${channelId}:${userId}`, permissions);
  }

  /** Makes a user a member of a guild, with permissions and roles of their own there. */
  addMember(guildId: string, userId: string, options: { permissions?: string; roles?: string[] } = {}): void {
    this.#state.addMember(guildId, userId, options);
  }

  /** A group DM of these users (the bot is not in it; only user installs reach it). */
  groupDmChannelId(userIds: string[]): string {
    return this.#state.groupDmChannel(userIds).id;
  }

  /** The DM channel between the bot and a user (created on first use). */
  dmChannelId(userId: string = this.defaultUserId): string {
    return this.#state.dmChannel(userId).id;
  }

  /**
   * Closes (or opens again) a user's DMs to the bot, like their "Direct messages" privacy
   * setting: opening the DM channel still works, sending a message in it is 403 50007.
   */
  setDmsOpen(userId: string, open: boolean): void {
    if (open) this.#state.dmsClosed.delete(userId);
    else this.#state.dmsClosed.add(userId);
  }

  /**
   * A forum channel (type 15), or with `media` a media channel (type 16), with its tags (`id`,
   * `name`, `moderated`, `emoji_id`, `emoji_name`); `requireTag` sets REQUIRE_TAG (1 << 4).
   * The bot posts in it with `POST /channels/{id}/threads`; `forumPosts(id)` lists the posts.
   */
  addForumChannel(options: ForumChannelOptions): {
    id: string;
    tags: ForumTag[];
    tagIds: Record<string, string>;
  } {
    const { id, tags } = this.#state.addForumChannel(options);
    return { id, tags, tagIds: Object.fromEntries(tags.map((t) => [t.name, t.id])) };
  }

  /** A forum's posts (oldest first, deleted ones too): thread state and starter message. */
  forumPosts(channelId: string): ThreadInfo[] {
    return threads(this.#state, channelId);
  }

  /** A thread (forum post or thread in a text channel, deleted ones too), or undefined. */
  thread(id: string): ThreadInfo | undefined {
    return threads(this.#state).find((t) => t.id === id);
  }

  /** Every thread (deleted ones too), oldest first; those of one parent channel when given. */
  threads(parentId?: string): ThreadInfo[] {
    return threads(this.#state, parentId);
  }

  /**
   * The bot's permissions in a guild (its member's; default VIEW_CHANNEL, SEND_MESSAGES, …).
   * E.g. add Manage Threads (1 << 34) to let it lock or delete threads.
   */
  botPermissions(guildId: string = this.guildId): string {
    return this.#state.botPermissions(guildId).toString();
  }

  setBotPermissions(permissions: string, guildId: string = this.guildId): void {
    this.#state.setMemberPermissions(guildId, this.applicationId, permissions);
  }

  /**
   * AutoMod's keyword filter (block message) in a guild: a message whose text (content, embeds,
   * Text Displays) has one of `words` is refused with 400 200000, a thread name or forum post
   * title with 200001. Whole words, case-insensitive; `*` at an end matches the rest of a word.
   * `[]` turns it off. What was blocked is in `autoModBlocks`.
   */
  setAutoModKeywords(guildId: string, words: string[]): void {
    this.#state.guild(guildId).autoModKeywords = [...words];
  }

  /** Messages and titles AutoMod blocked, in order. */
  get autoModBlocks(): readonly AutoModBlock[] {
    return this.#state.autoModBlocks;
  }

  /** Turns the reproduction of discord-api-docs #8611 (listing messages next to a Container answers 500) on or off. */
  setContainerListBug(on: boolean): void {
    this.#state.containerListBug = on;
  }

  /** The first text channel of a guild. */
  defaultChannelOf(guildId: string): string {
    return this.#state.defaultChannelOf(guildId);
  }

  /** Registers bytes on the fake CDN and returns the Discord attachment object (use its id in interactions). */
  addAttachment(input: AttachmentInput, channelId?: string): FakeAttachment & JsonObject {
    return addAttachment(this.#state, input, channelId);
  }

  /**
   * Simulates a user posting in a channel, with files (`attachments`) and embeds if given
   * (MESSAGE_CREATE is dispatched if the bot has GUILD_MESSAGES and is in that server).
   */
  postUserMessage(input: UserMessageInput): FakeMessage {
    return postUserMessage(this.#state, input);
  }

  /** Messages in a channel (oldest first), excluding deleted unless asked. */
  channelMessages(channelId: string = this.defaultChannelId, includeDeleted = false): FakeMessage[] {
    return channelMessages(this.#state, channelId, includeDeleted);
  }

  get globalCommands(): JsonObject[] {
    return this.commands.global;
  }

  guildCommands(guildId: string = this.guildId): JsonObject[] {
    return this.commands.guilds.get(guildId) ?? [];
  }

  // ===========================================================================================
  // Interactions (fake -> bot)

  /** Dispatches an APPLICATION_COMMAND interaction (type 2) to the bot. */
  sendCommand(input: CommandInput): InteractionHandle {
    return sendCommand(this.#state, input);
  }

  /** Dispatches an APPLICATION_COMMAND_AUTOCOMPLETE interaction (type 4); one option is `focused`. */
  sendAutocomplete(input: AutocompleteInput): InteractionHandle {
    return sendAutocomplete(this.#state, input);
  }

  /**
   * A message context-menu command (Apps → `name` on a message): APPLICATION_COMMAND with
   * `data.type` 3, `target_id` and `resolved.messages`. Throws where Discord would not offer it.
   */
  sendMessageCommand(input: MessageCommandInput): InteractionHandle {
    return sendMessageCommand(this.#state, input);
  }

  /**
   * A server admin's per-member override of a command (Server Settings → Integrations): `true`
   * offers it to the member whatever its default_member_permissions, `false` hides it.
   */
  setCommandPermission(guildId: string, name: string, userId: string, allowed: boolean, type = 1): void {
    setCommandPermission(this.#state, guildId, name, userId, allowed, type);
  }

  /** Dispatches a MESSAGE_COMPONENT interaction (type 3) for a component on an existing message. */
  sendButton(input: ComponentInput): InteractionHandle {
    return this.sendComponent(input);
  }

  sendComponent(input: ComponentInput): InteractionHandle {
    return sendComponent(this.#state, input);
  }

  /** Dispatches a MODAL_SUBMIT interaction (type 5). Fields are wrapped in Label (18) components like Discord does. */
  sendModalSubmit(input: ModalSubmitInput): InteractionHandle {
    return sendModalSubmit(this.#state, input);
  }

  /** Handle for an interaction created earlier (e.g. to look at its follow-ups). */
  interaction(id: string): InteractionHandle {
    const state = this.interactions.get(id);
    if (!state) throw new Error(`fake-discord: unknown interaction ${id}`);
    return interactionHandle(this.#state, state);
  }

  // ===========================================================================================
  // HTTP interactions (an application with an Interactions Endpoint URL)

  /** The application's public key (hex), what the bot gets as DISCORD_PUBLIC_KEY. */
  get publicKey(): string {
    return this.signer.publicKey;
  }

  get interactionsMode(): 'gateway' | 'http' {
    return this.#state.interactionsMode;
  }

  /** Switches how interactions reach the bot; `http` needs the bot's `POST /interactions` URL. */
  setInteractionsMode(mode: 'gateway' | 'http', url?: string): void {
    this.#state.interactionsMode = mode;
    if (url !== undefined) this.#state.interactionsUrl = url;
  }

  /** Delivers an interaction created earlier once more (Discord may deliver twice). */
  redeliver(interactionId: string, opts: PostOptions = {}): Promise<HttpDelivery> {
    const state = this.interactions.get(interactionId);
    if (!state) throw new Error(`fake-discord: unknown interaction ${interactionId}`);
    return deliverOverHttp(this.#state, state, opts);
  }

  /**
   * Dispatches an interaction created earlier once more over the gateway, as a session's
   * RESUME replays what it missed or a connection about to be dropped still delivers it.
   */
  redispatch(interactionId: string): void {
    const state = this.interactions.get(interactionId);
    if (!state) throw new Error(`fake-discord: unknown interaction ${interactionId}`);
    this.gateway.dispatch('INTERACTION_CREATE', state.payload);
  }

  /** A PING, as Discord sends when the Interactions Endpoint URL is saved (and with bad signatures to test it). */
  sendPing(opts: PostOptions = {}): Promise<HttpDelivery> {
    return sendPing(this.#state, opts);
  }

  /** POSTs any body (signed as `opts` says) to the interactions URL: for malformed-input tests. */
  postRawInteraction(body: string, opts: PostOptions = {}): Promise<HttpDelivery> {
    return postRawInteraction(this.#state, body, opts);
  }
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = new FakeDiscord(options);
  await fake.listen();
  return fake;
}
