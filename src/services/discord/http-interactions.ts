import {
  ClientApplication,
  DiscordAPIError,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  Routes,
  type APIInteraction,
  type APIInteractionResponse,
  type APIMessage,
  type Client,
} from 'discord.js';
import type { InternalRequest, REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import { STORE_DOWN_MESSAGE } from '../store/errors.js';

/**
 * Interactions received over HTTP (`DISCORD_INTERACTIONS=http`), run through the
 * very same discord.js objects and command code as gateway interactions.
 *
 * How the initial response reaches Discord. Discord documents two ways for an
 * HTTP interaction: the HTTP response body, or `POST /interactions/{id}/{token}/callback`
 * followed by "a 202 and no body" on the HTTP request. The commands answer through
 * discord.js (`reply`, `deferReply`, `showModal`, `respond`, `update`…), which uses the
 * callback endpoint; for messages that path is kept as is: files, `with_response` (the
 * reply's message id) and every discord.js check work unchanged, and Discord has
 * applied the answer before any edit of it is sent. The HTTP request is held open
 * until that callback has been accepted, then answered 202. Answers nothing follows
 * (autocomplete choices, opening a form) go in the HTTP response body instead: one
 * request fewer on the most latency-sensitive path.
 *
 * Discord's 3 s rule: when the command has not started its answer `ackDeadlineMs`
 * (default 2.5 s) after the request arrived, the HTTP response itself acknowledges (a
 * deferred reply; autocomplete: no choices), and the command's late answer is
 * translated into what Discord still accepts (see #late).
 *
 * Each interaction is handled once: its id is claimed in the store first (shared
 * by every instance), so a second delivery is answered 202 without running anything.
 */

export type HttpReply =
  /**
   * The answer is this body. `sent`, when present, must be called once the response
   * has been written: translated late answers wait for it (Discord must have the
   * acknowledgement before an edit of the deferred reply can find it).
   */
  | { status: 200; body: APIInteractionResponse; sent?: () => void }
  /** The answer went through the callback endpoint (or, `duplicate`, was already given). */
  | { status: 202; duplicate?: true };

export interface HttpInteractionsDeps {
  client: Client;
  logger: Logger;
  /** Claims an interaction id across instances: true the first time, false for a duplicate. */
  claim(interactionId: string): Promise<boolean>;
  /**
   * When the command has not begun to answer by then, the HTTP response acknowledges.
   * Counted from the request's arrival (the claim included). Default 2500; 0: always
   * acknowledge at once (tests of the late-answer path).
   */
  ackDeadlineMs?: number;
  /** The claim gets this long (default 1500 ms) before the interaction is answered "unavailable". */
  claimTimeoutMs?: number;
  /** How long translation state for an auto-acknowledged interaction is kept (its token's life). */
  tokenLifetimeMs?: number;
}

type State =
  /** Waiting for the command's first callback (HTTP request open). */
  | 'waiting'
  /** The command's callback is on its way to Discord. */
  | 'sending'
  /** The command's callback was accepted: the HTTP request got its 202. */
  | 'answered'
  /** The HTTP response acknowledged (deadline); later callbacks are translated. */
  | 'auto-acked';

/** Where `@original` of an auto-acknowledged interaction really is, once the command's answer moved it. */
type Original =
  /** A follow-up message of the interaction replaced the deferred one. */
  | { kind: 'webhook'; messageId: string }
  /** The component's own (public) message: edited with the bot token. */
  | { kind: 'channel'; channelId: string; messageId: string }
  /** Not created yet: the next edit of `@original` creates it as a follow-up with these flags. */
  | { kind: 'next-follow-up'; flags: number };

interface Pending {
  id: string;
  token: string;
  applicationId: string;
  kind: InteractionType;
  /** Components and modals opened from one: the message they are on. */
  source?: { channelId: string; messageId: string; ephemeral: boolean };
  state: State;
  original?: Original;
  reply: (r: HttpReply) => void;
  timer?: NodeJS.Timeout;
  /** Auto-acked: resolves when the HTTP response carrying the acknowledgement was written. */
  ackSent?: Promise<void>;
}

type Send = (options: InternalRequest) => Promise<unknown>;

const ACK_SENT_WAIT_MS = 3000;
const UNKNOWN_RETRIES = 4;
const UNKNOWN_RETRY_MS = 250;
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Answers nothing follows (autocomplete choices, a form): given in the HTTP response body. */
const INLINE_TYPES = new Set<number>([
  InteractionResponseType.ApplicationCommandAutocompleteResult,
  InteractionResponseType.Modal,
]);

const CALLBACK_ROUTE = /^\/interactions\/(\d{1,20})\/([^/]+)\/callback$/;
// discord-api-types' Routes encode `@original` as `%40original`; callers may use either.
const ORIGINAL_ROUTE = /^\/webhooks\/(\d{1,20})\/([^/]+)\/messages\/(?:@|%40)original$/;

const BROKEN = 'Sorry, the bot could not read this request. Please try again.';
const SHUTTING_DOWN = 'The bot is restarting. Please try again in a few seconds.';
const TOO_SLOW = 'That took longer than Discord allows for opening a form. Please click the button again.';

interface CallbackBody {
  type: InteractionResponseType;
  data?: { flags?: number } & Record<string, unknown>;
}

function callbackBody(options: InternalRequest): CallbackBody | undefined {
  const b = options.body as unknown;
  if (typeof b !== 'object' || b === null || typeof (b as { type?: unknown }).type !== 'number')
    return undefined;
  return b as CallbackBody;
}

const isEphemeral = (flags: number | undefined): boolean =>
  flags !== undefined && (flags & MessageFlags.Ephemeral) !== 0;

export class HttpInteractions {
  readonly #deps: HttpInteractionsDeps;
  readonly #pending = new Map<string, Pending>();
  readonly #byToken = new Map<string, Pending>();
  #closed = false;

  constructor(deps: HttpInteractionsDeps) {
    this.#deps = deps;
  }

  /**
   * Routes a REST instance through this object: the client's (callbacks, replies)
   * and the edit queue's interaction REST (so `@original` of an interaction whose
   * answer had to move is found there too).
   */
  install(rest: REST): void {
    const send: Send = rest.request.bind(rest);
    rest.request = (options: InternalRequest) => this.#intercept(options, send);
  }

  /** Interactions waiting for their first answer or holding translation state. */
  get size(): number {
    return this.#pending.size;
  }

  close(): void {
    this.#closed = true;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      // Still unanswered at shutdown: say so rather than let Discord show a failure.
      if (p.state === 'waiting') p.reply({ status: 200, body: apology({ type: p.kind }, SHUTTING_DOWN) });
      else if (p.state === 'sending') p.reply({ status: 202 });
    }
    this.#pending.clear();
    this.#byToken.clear();
  }

  /**
   * Runs one verified interaction and resolves with the HTTP answer for Discord.
   * PING → PONG; a duplicate → 202 without running anything.
   */
  async handle(raw: APIInteraction): Promise<HttpReply> {
    if (raw.type === InteractionType.Ping)
      return { status: 200, body: { type: InteractionResponseType.Pong } };
    const log = this.#deps.logger.child({ interactionId: raw.id, kind: raw.type });
    if (this.#closed) return { status: 200, body: apology(raw, SHUTTING_DOWN) };
    const receivedAt = Date.now();
    let first: boolean;
    try {
      // Bounded: Discord's 3 s run from now, and a store this slow could not run the command anyway.
      first = await withTimeout(this.#deps.claim(raw.id), this.#deps.claimTimeoutMs ?? 1500);
    } catch (err) {
      // Without the store nothing can run (jobs, sessions, settings all live there): say so now.
      log.warn({ err }, 'store unavailable; interaction answered with an apology');
      return { status: 200, body: apology(raw, STORE_DOWN_MESSAGE) };
    }
    if (!first) {
      // Already handled (Discord retried, or another instance got it): its own answer
      // went or goes through the callback endpoint, and a 202 adds no second one.
      log.info('duplicate interaction delivery; not run again');
      return { status: 202, duplicate: true };
    }

    return new Promise<HttpReply>((resolve) => {
      let settled = false;
      const message = 'message' in raw ? raw.message : undefined;
      const pending: Pending = {
        id: raw.id,
        token: raw.token,
        applicationId: raw.application_id,
        kind: raw.type,
        ...(message
          ? {
              source: {
                channelId: message.channel_id,
                messageId: message.id,
                ephemeral: isEphemeral(message.flags),
              },
            }
          : {}),
        state: 'waiting',
        reply: (r) => {
          if (settled) return;
          settled = true;
          resolve(r);
        },
      };
      this.#pending.set(raw.id, pending);
      this.#byToken.set(raw.token, pending);
      const deadlineMs = (this.#deps.ackDeadlineMs ?? 2500) - (Date.now() - receivedAt);
      if (deadlineMs <= 0) {
        // Acknowledge before the command runs: every answer takes the translated path.
        this.#deadline(pending);
      } else {
        pending.timer = setTimeout(() => this.#deadline(pending), deadlineMs);
        pending.timer.unref();
      }
      try {
        // The same path as a gateway INTERACTION_CREATE: builds the discord.js
        // interaction and emits Events.InteractionCreate to the router.
        ensureApplication(this.#deps.client, raw.application_id);
        cacheChannel(this.#deps.client, raw);
        interactionCreate(this.#deps.client).handle(raw);
      } catch (err) {
        // Nothing will answer it: say so now rather than leave "thinking…" forever.
        log.error({ err }, 'could not build the interaction');
        this.#forget(pending);
        pending.state = 'answered';
        pending.reply({ status: 200, body: apology(raw, BROKEN) });
      }
    });
  }

  #forget(p: Pending): void {
    clearTimeout(p.timer);
    if (this.#pending.get(p.id) === p) this.#pending.delete(p.id);
    if (this.#byToken.get(p.token) === p) this.#byToken.delete(p.token);
  }

  #deadline(p: Pending): void {
    if (p.state !== 'waiting') return; // answered, or its answer is on the way
    const ack = autoAck(p.kind);
    p.state = 'auto-acked';
    this.#deps.logger.warn(
      { interactionId: p.id, kind: p.kind, ack: ack.type },
      'command did not answer in time; acknowledged on its behalf',
    );
    let sent!: () => void;
    const written = new Promise<void>((resolve) => (sent = resolve));
    // Bounded: a response that never finishes writing must not hold the late answer forever.
    p.ackSent = Promise.race([written, delay(ACK_SENT_WAIT_MS)]);
    p.reply({ status: 200, body: ack, sent });
    // Translation state lives as long as the token, then goes.
    clearTimeout(p.timer);
    p.timer = setTimeout(() => this.#forget(p), this.#deps.tokenLifetimeMs ?? 15 * 60_000);
    p.timer.unref();
  }

  async #intercept(options: InternalRequest, send: Send): Promise<unknown> {
    if (options.method === 'POST') {
      const m = CALLBACK_ROUTE.exec(options.fullRoute);
      const p = m ? this.#pending.get(m[1] ?? '') : undefined;
      if (p && p.token === m?.[2]) return this.#callback(p, options, send);
    } else {
      const m = ORIGINAL_ROUTE.exec(options.fullRoute);
      const p = m ? this.#byToken.get(m[2] ?? '') : undefined;
      if (p?.original) return this.#original(p, p.original, options, send);
    }
    return send(options);
  }

  /** The command's answer (reply, defer, update, modal, choices). */
  async #callback(p: Pending, options: InternalRequest, send: Send): Promise<unknown> {
    if (p.state === 'auto-acked') return this.#late(p, options, send);
    if (p.state !== 'waiting') return send(options); // a second answer: Discord says 40060, as it should
    const body = callbackBody(options);
    if (body && INLINE_TYPES.has(body.type) && !options.files?.length) {
      // Nothing follows these (no message to edit): the HTTP response carries them.
      p.state = 'answered';
      p.reply({ status: 200, body: body as APIInteractionResponse });
      this.#forget(p);
      return options.query?.get('with_response') === 'true'
        ? { interaction: { id: p.id, type: p.kind } }
        : undefined;
    }
    p.state = 'sending';
    try {
      const res = await send(options);
      p.state = 'answered';
      p.reply({ status: 202 });
      this.#forget(p);
      return res;
    } catch (err) {
      // Not accepted: the command (or the router's error reply) may answer again;
      // the deadline still acknowledges in time. A network failure may mean Discord
      // never saw it: acknowledge in the HTTP response now.
      p.state = 'waiting';
      if (!(err instanceof DiscordAPIError)) this.#deadline(p);
      throw err;
    }
  }

  /**
   * A callback after the automatic acknowledgement (a deferred public reply):
   * what Discord still accepts instead, answered to discord.js as the callback
   * would have been (204, or the `with_response` shape).
   */
  async #late(p: Pending, options: InternalRequest, rawSend: Send): Promise<unknown> {
    const body = callbackBody(options);
    if (!body) return rawSend(options);
    await p.ackSent;
    // Discord may take a moment to turn the HTTP acknowledgement into the deferred
    // reply: the first webhook call of the translation retries "unknown" briefly.
    let warm = false;
    const send: Send = async (o) => {
      if (warm) return rawSend(o);
      for (let attempt = 0; ; attempt++) {
        try {
          const res = await rawSend(o);
          warm = true;
          return res;
        } catch (err) {
          const unknown = err instanceof DiscordAPIError && (err.code === 10015 || err.code === 10008);
          if (!unknown || attempt >= UNKNOWN_RETRIES) throw err;
          await delay(UNKNOWN_RETRY_MS * (attempt + 1));
        }
      }
    };
    const withResponse = options.query?.get('with_response') === 'true';
    const files = options.files ? { files: options.files } : {};
    const data: Record<string, unknown> & { flags?: number } = body.data ?? {};
    const log = this.#deps.logger.child({ interactionId: p.id });
    const deferred = Routes.webhookMessage(p.applicationId, p.token, '@original');
    const dropDeferred = () =>
      send({ method: 'DELETE', fullRoute: deferred, auth: false } as InternalRequest).catch((e: unknown) =>
        log.debug({ err: e }, 'could not delete the deferred reply'),
      );
    const followUp = async (payload: Record<string, unknown>): Promise<APIMessage> =>
      (await send({
        method: 'POST',
        fullRoute: Routes.webhook(p.applicationId, p.token),
        auth: false,
        body: payload,
        ...files,
        query: new URLSearchParams({ wait: 'true' }),
      } as InternalRequest)) as APIMessage;
    const answer = (type: InteractionResponseType, message?: APIMessage) =>
      withResponse
        ? {
            interaction: {
              id: p.id,
              type: p.kind,
              ...(message
                ? {
                    response_message_id: message.id,
                    response_message_loading: false,
                    response_message_ephemeral: isEphemeral(message.flags),
                  }
                : {}),
            },
            resource: message ? { type, message } : { type },
          }
        : undefined;

    log.info({ type: body.type }, 'late answer translated after the automatic acknowledgement');
    switch (body.type) {
      case InteractionResponseType.ChannelMessageWithSource: {
        if (!isEphemeral(data.flags)) {
          const { flags: _ignored, ...rest } = data;
          const msg = (await send({
            method: 'PATCH',
            fullRoute: deferred,
            auth: false,
            body: rest,
            ...files,
          } as InternalRequest)) as APIMessage;
          return answer(body.type, msg);
        }
        // The public "thinking…" message cannot become ephemeral: replace it.
        await dropDeferred();
        const msg = await followUp(data);
        p.original = { kind: 'webhook', messageId: msg.id };
        return answer(body.type, msg);
      }
      case InteractionResponseType.DeferredChannelMessageWithSource: {
        if (!isEphemeral(data.flags)) return answer(body.type);
        await dropDeferred();
        p.original = { kind: 'next-follow-up', flags: MessageFlags.Ephemeral };
        return answer(body.type);
      }
      case InteractionResponseType.DeferredMessageUpdate:
      case InteractionResponseType.UpdateMessage: {
        // Meant for the component's message, not for the deferred reply.
        await dropDeferred();
        const src = p.source;
        if (src && !src.ephemeral) {
          p.original = { kind: 'channel', channelId: src.channelId, messageId: src.messageId };
        } else {
          p.original = { kind: 'next-follow-up', flags: MessageFlags.Ephemeral };
        }
        if (body.type === InteractionResponseType.DeferredMessageUpdate) return answer(body.type);
        const msg = (await this.#original(
          p,
          p.original,
          { method: 'PATCH', fullRoute: deferred, auth: false, body: data, ...files } as InternalRequest,
          send,
        )) as APIMessage;
        return answer(body.type, msg);
      }
      case InteractionResponseType.ApplicationCommandAutocompleteResult:
        return answer(body.type); // Discord already showed no choices
      case InteractionResponseType.Modal: {
        log.warn('a form was opened too late for Discord; the member is asked to retry');
        await dropDeferred();
        await followUp({ content: TOO_SLOW, flags: MessageFlags.Ephemeral, allowed_mentions: { parse: [] } });
        return answer(body.type);
      }
      default:
        return send(options);
    }
  }

  /** `@original` of an interaction whose answer had to move (see #late). */
  async #original(p: Pending, original: Original, options: InternalRequest, send: Send): Promise<unknown> {
    switch (original.kind) {
      case 'webhook':
        return send({
          ...options,
          fullRoute: Routes.webhookMessage(p.applicationId, p.token, original.messageId),
        });
      case 'channel':
        if (options.method === 'PATCH') {
          const { flags: _ignored, ...body } = (options.body ?? {}) as Record<string, unknown>;
          return send({
            ...options,
            fullRoute: Routes.channelMessage(original.channelId, original.messageId),
            auth: true,
            body,
          });
        }
        if (options.method === 'GET') {
          return send({
            ...options,
            fullRoute: Routes.channelMessage(original.channelId, original.messageId),
            auth: true,
          });
        }
        return undefined; // never delete the component's own message
      case 'next-follow-up': {
        if (options.method !== 'PATCH') return send(options);
        const body = { ...((options.body ?? {}) as Record<string, unknown>) };
        body['flags'] = (Number(body['flags'] ?? 0) | original.flags) >>> 0;
        const msg = (await send({
          method: 'POST',
          fullRoute: Routes.webhook(p.applicationId, p.token),
          auth: false,
          body,
          ...(options.files ? { files: options.files } : {}),
          query: new URLSearchParams({ wait: 'true' }),
        } as InternalRequest)) as APIMessage;
        p.original = { kind: 'webhook', messageId: msg.id };
        return msg;
      }
    }
  }
}

/**
 * discord.js's own INTERACTION_CREATE action (what its gateway handler calls):
 * not in its typings, so checked here once rather than trusted.
 */
function interactionCreate(client: Client): { handle(data: APIInteraction): void } {
  const action = (client as unknown as { actions?: { InteractionCreate?: { handle?: unknown } } }).actions
    ?.InteractionCreate;
  if (typeof action?.handle !== 'function') {
    throw new Error('discord.js has no InteractionCreate action (unsupported version)');
  }
  return action as { handle(data: APIInteraction): void };
}

/**
 * READY sets `client.application` over the gateway; discord.js reads it while
 * building an interaction (its entitlements). Without a gateway, set it from the
 * interaction's application id.
 */
function ensureApplication(client: Client, applicationId: string): void {
  if (client.application) return;
  const appClass = ClientApplication as unknown as new (c: Client, data: { id: string }) => ClientApplication;
  (client as { application: ClientApplication | null }).application = new appClass(client, {
    id: applicationId,
  });
}

/**
 * Over the gateway, `interaction.channel` comes from the guild's cached channels;
 * with no gateway there is no such cache. The interaction carries its channel
 * (id, type, name, parent): cache that, so `interaction.channel` (e.g. "is this
 * a thread?") answers as in gateway mode. Guild-less on purpose: the bot never
 * reads a guild from the cache.
 */
function cacheChannel(client: Client, raw: APIInteraction): void {
  const channel = 'channel' in raw ? raw.channel : undefined;
  if (!channel || !raw.guild_id) return;
  const manager = client.channels as unknown as {
    _add(data: unknown, guild: null, opts: { cache: boolean; allowUnknownGuild: boolean }): unknown;
    cache: Map<string, unknown>;
  };
  const made = manager._add({ ...channel, guild_id: raw.guild_id }, null, {
    cache: false,
    allowUnknownGuild: true,
  });
  if (made) manager.cache.set(channel.id, made);
}

/** The acknowledgement the HTTP response gives for a command too slow to answer. */
function autoAck(kind: InteractionType): APIInteractionResponse {
  // A deferred public reply for everything but autocomplete: the usual late answer
  // is a new message (a job's live message), which then simply fills it in.
  return kind === InteractionType.ApplicationCommandAutocomplete
    ? { type: InteractionResponseType.ApplicationCommandAutocompleteResult, data: { choices: [] } }
    : { type: InteractionResponseType.DeferredChannelMessageWithSource };
}

function apology(raw: { type: InteractionType }, content: string): APIInteractionResponse {
  if (raw.type === InteractionType.ApplicationCommandAutocomplete) {
    return { type: InteractionResponseType.ApplicationCommandAutocompleteResult, data: { choices: [] } };
  }
  return {
    type: InteractionResponseType.ChannelMessageWithSource,
    data: { content, flags: MessageFlags.Ephemeral, allowed_mentions: { parse: [] } },
  };
}
