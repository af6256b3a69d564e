import type { InteractionsAPI } from '@discordjs/core/http-only';
import { DiscordAPIError, type RawFile } from '@discordjs/rest';
import {
  ApplicationCommandType,
  ApplicationIntegrationType,
  ChannelType,
  ComponentType,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  type APIApplicationCommandOptionChoice,
  type APIAttachment,
  type APIInteraction,
  type APIInteractionResponse,
  type APIInteractionResponseCallbackData,
  type APIMessage,
  type APIModalInteractionResponseCallbackData,
  type APIModalSubmission,
  type APIUser,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { editBody } from '../render/limits.js';
import { OptionResolver } from './options.js';

/**
 * One interaction, whichever way it arrived (gateway INTERACTION_CREATE or
 * `POST /interactions`), answered through `@discordjs/core`'s InteractionsAPI:
 * the one object the command code talks to. Its method names follow discord.js's
 * (`reply`, `deferReply`, `editReply`, `followUp`, `update`, `showModal`,
 * `respond`) so handlers read the same; underneath it is plain API JSON.
 *
 * Discord's 3 s rule is kept here for every command: when nothing has answered
 * `ackAfterMs` after arrival, the interaction is acknowledged (a deferral) — over
 * HTTP in the HTTP response itself, over the gateway with the callback — and the
 * handler's later answer is translated into what Discord still accepts (a reply
 * becomes an edit of the deferred message, or a follow-up when its visibility
 * differs). Every response goes through one chain, so a deferral and an answer
 * never race.
 */

/** What a message answer carries: API JSON plus files to upload (multipart). */
export type MessageBody = Omit<APIInteractionResponseCallbackData, 'flags'> & {
  flags?: number;
  files?: RawFile[];
};

export interface ReplyOptions {
  ephemeral?: boolean;
}

/** How the first acknowledgement travels when the handler is late. */
export interface AckTransport {
  /**
   * HTTP mode: answers the HTTP request with `body` and resolves once the response is
   * written (Discord must hold the acknowledgement before an edit of it can find it).
   * Absent (gateway): the acknowledgement is POSTed to the callback endpoint.
   */
  ackInResponse?(body: APIInteractionResponse): Promise<void>;
  /** HTTP mode: the handler's first callback was accepted by Discord (the HTTP request may now get its 202). */
  firstCallbackDone?(): void;
  /**
   * HTTP mode: answers nothing follows (autocomplete choices, a form) go in the HTTP
   * response body, one request fewer on the most latency-sensitive path.
   */
  answerInline?(body: APIInteractionResponse): Promise<void>;
  /**
   * HTTP mode: the handler is done and Discord accepted none of its answers (its
   * callbacks failed on the network): the HTTP request is answered now rather than
   * left open until Discord gives up on it.
   */
  unanswered?(): void;
}

export interface InteractionOptions {
  api: InteractionsAPI;
  logger: Logger;
  /** Acknowledge automatically when nothing answered by then (ms from arrival). 0: never. */
  ackAfterMs: number;
  /** Whether a late command is deferred ephemerally (its answer is private). */
  ephemeralByDefault?: boolean;
  transport?: AckTransport;
  receivedAt?: number;
  /**
   * Whether REST sent this interaction's callback more than once (./callback-retries.ts).
   * Only then is a 40060 on a first callback our own lost answer; absent: never.
   */
  callbackRetried?: (interactionId: string) => boolean;
  /** Called once, when Discord took the first answer (./first-answers.ts). */
  onFirstAnswer?: () => void;
}

/** A handler answered something Discord cannot take any more (a form after the acknowledgement). */
export class TooLateError extends Error {
  constructor(what: string) {
    super(`${what}: the interaction was already acknowledged`);
    this.name = 'TooLateError';
  }
}

/** Discord's cap on follow-ups of an interaction brought by a user install only. */
export const MAX_USER_INSTALL_FOLLOW_UPS = 5;

/** The 6th follow-up of a user-installed app's interaction: Discord would answer 40094. */
export class FollowUpLimitError extends Error {
  readonly code = 40094;
  constructor() {
    super(`an interaction of a user-installed app takes at most ${MAX_USER_INSTALL_FOLLOW_UPS} follow-ups`);
    this.name = 'FollowUpLimitError';
  }
}

type State = 'new' | 'deferred' | 'replied';
/** How the interaction was acknowledged without an answer. */
type Deferral = { kind: 'message'; ephemeral: boolean } | { kind: 'update' };

const ALREADY_ACKNOWLEDGED = 40060;
const EPHEMERAL = MessageFlags.Ephemeral;

const isEphemeral = (flags: number | undefined): boolean => flags !== undefined && (flags & EPHEMERAL) !== 0;

/** Discord snowflakes carry their creation time (ms since 2015-01-01). */
export function snowflakeTime(id: string): number {
  try {
    return Number(BigInt(id) >> 22n) + 1_420_070_400_000;
  } catch {
    return Date.now();
  }
}

export class BotInteraction {
  readonly raw: APIInteraction;
  readonly id: string;
  readonly token: string;
  readonly applicationId: string;
  readonly type: InteractionType;
  readonly user: APIUser;
  readonly guildId: string | null;
  readonly channelId: string | null;
  /** The member's client language (Discord locale), when Discord sent it. */
  readonly locale: string | undefined;
  /** The server's preferred language, in a server. */
  readonly guildLocale: string | undefined;
  /** The member's permissions in this channel (a server only). */
  readonly memberPermissions: bigint | undefined;
  readonly createdTimestamp: number;

  readonly #api: InteractionsAPI;
  readonly #logger: Logger;
  readonly #transport: AckTransport;
  readonly #ephemeralByDefault: boolean;
  /** Brought by the member's own install only: Discord caps its follow-ups (#followUp). */
  readonly #userInstallOnly: boolean;
  #state: State = 'new';
  #deferral: Deferral | undefined;
  /** The handler's first callback has been reported to the transport. */
  #firstReported = false;
  /**
   * Where the reply really is: `@original`, or the follow-up that took the place of a
   * deferral (another visibility, or a component's deferred update answered with a message).
   */
  #original = '@original';
  /**
   * A message deferral the handler asked for after the automatic acknowledgement gave
   * another one (another visibility, or an update): its answer becomes a follow-up.
   */
  #wanted: { ephemeral: boolean } | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  /** Follow-ups sent (counted against Discord's cap for user-installed apps). */
  #followUps = 0;
  /**
   * Acknowledged in the HTTP response: Discord may take a moment to turn it into the
   * deferred message, so the first webhook call after it retries "unknown" briefly.
   */
  #cold = false;
  #ackTimer: NodeJS.Timeout | undefined;
  #options: OptionResolver | undefined;
  readonly #callbackRetried: (interactionId: string) => boolean;
  readonly #onFirstAnswer: (() => void) | undefined;
  /** A first callback of ours went out and its outcome is unknown (it may have been taken). */
  #callbackMaybeTaken = false;
  /**
   * Another run answered this interaction (40060 on a callback of ours that Discord cannot
   * have taken before): nothing more is sent for it, every answer throws this.
   */
  #foreign: DiscordAPIError | undefined;

  constructor(raw: APIInteraction, opts: InteractionOptions) {
    this.raw = raw;
    this.id = raw.id;
    this.token = raw.token;
    this.applicationId = raw.application_id;
    this.type = raw.type;
    const member = 'member' in raw ? raw.member : undefined;
    this.user = member?.user ?? ('user' in raw && raw.user ? raw.user : ({ id: '0' } as APIUser));
    this.guildId = raw.guild_id ?? null;
    this.channelId = raw.channel?.id ?? ('channel_id' in raw ? (raw.channel_id ?? null) : null);
    this.locale = 'locale' in raw ? raw.locale : undefined;
    this.guildLocale = raw.guild_locale ?? undefined;
    this.memberPermissions = parsePermissions(member?.permissions);
    this.createdTimestamp = snowflakeTime(raw.id);
    this.#userInstallOnly =
      // `!= null`: a payload's null is no map either (it must not throw before anything is owed).
      raw.authorizing_integration_owners != null &&
      raw.authorizing_integration_owners[ApplicationIntegrationType.GuildInstall] === undefined;
    this.#api = opts.api;
    this.#logger = opts.logger;
    this.#transport = opts.transport ?? {};
    this.#ephemeralByDefault = opts.ephemeralByDefault ?? false;
    this.#callbackRetried = opts.callbackRetried ?? (() => false);
    this.#onFirstAnswer = opts.onFirstAnswer;
    if (opts.ackAfterMs > 0 && raw.type !== InteractionType.Ping) {
      const elapsed = Date.now() - (opts.receivedAt ?? Date.now());
      this.#ackTimer = setTimeout(() => void this.#autoAck(), Math.max(0, opts.ackAfterMs - elapsed));
      this.#ackTimer.unref();
    } else if (opts.ackAfterMs === 0 && opts.transport?.ackInResponse && raw.type !== InteractionType.Ping) {
      // Tests of the late path: acknowledged before the handler runs.
      void this.#autoAck();
    }
  }

  // ---------------------------------------------------------------- what it is

  isChatInputCommand(): boolean {
    return (
      this.raw.type === InteractionType.ApplicationCommand &&
      this.raw.data.type === ApplicationCommandType.ChatInput
    );
  }

  isMessageContextMenuCommand(): boolean {
    return (
      this.raw.type === InteractionType.ApplicationCommand &&
      this.raw.data.type === ApplicationCommandType.Message
    );
  }

  isAutocomplete(): boolean {
    return this.raw.type === InteractionType.ApplicationCommandAutocomplete;
  }

  isButton(): boolean {
    return (
      this.raw.type === InteractionType.MessageComponent &&
      this.raw.data.component_type === ComponentType.Button
    );
  }

  isStringSelectMenu(): boolean {
    return (
      this.raw.type === InteractionType.MessageComponent &&
      this.raw.data.component_type === ComponentType.StringSelect
    );
  }

  isModalSubmit(): boolean {
    return this.raw.type === InteractionType.ModalSubmit;
  }

  /** A server, not a DM or a group DM. */
  inGuild(): boolean {
    return this.guildId !== null;
  }

  /** The command's name (commands and autocomplete). */
  get commandName(): string {
    const r = this.raw;
    return r.type === InteractionType.ApplicationCommand ||
      r.type === InteractionType.ApplicationCommandAutocomplete
      ? r.data.name
      : '';
  }

  /** The component's or form's custom id (components and modals). */
  get customId(): string {
    const r = this.raw;
    return r.type === InteractionType.MessageComponent || r.type === InteractionType.ModalSubmit
      ? r.data.custom_id
      : '';
  }

  /** A select menu's chosen values. */
  get values(): string[] {
    const r = this.raw;
    return r.type === InteractionType.MessageComponent && 'values' in r.data ? [...r.data.values] : [];
  }

  /** The message a component (or a form opened from one) sits on. */
  get message(): APIMessage | undefined {
    const r = this.raw;
    return r.type === InteractionType.MessageComponent || r.type === InteractionType.ModalSubmit
      ? r.message
      : undefined;
  }

  /** A message command's target message. */
  get targetMessage(): APIMessage | undefined {
    const r = this.raw;
    if (r.type !== InteractionType.ApplicationCommand || r.data.type !== ApplicationCommandType.Message)
      return undefined;
    return r.data.resolved.messages[r.data.target_id];
  }

  /** The interaction happens in a thread. */
  inThread(): boolean {
    const t = this.raw.channel?.type;
    return (
      t === ChannelType.PublicThread ||
      t === ChannelType.PrivateThread ||
      t === ChannelType.AnnouncementThread
    );
  }

  get options(): OptionResolver {
    if (!this.#options) {
      const r = this.raw;
      this.#options =
        (r.type === InteractionType.ApplicationCommand ||
          r.type === InteractionType.ApplicationCommandAutocomplete) &&
        r.data.type === ApplicationCommandType.ChatInput
          ? new OptionResolver(r.data.options, r.data.resolved)
          : new OptionResolver(undefined, undefined);
    }
    return this.#options;
  }

  /** A submitted form's fields. */
  get fields(): ModalFields {
    const r = this.raw;
    return new ModalFields(r.type === InteractionType.ModalSubmit ? r.data : undefined);
  }

  get deferred(): boolean {
    return this.#state === 'deferred';
  }

  get replied(): boolean {
    return this.#state === 'replied';
  }

  /**
   * The follow-up that stands for the reply when `@original` is not it (the deferral was
   * replaced, or a component's deferred update was answered with a new message); anything
   * editing "the reply" through the interaction token must address this id.
   */
  get replyMessageId(): string | undefined {
    return this.#original === '@original' ? undefined : this.#original;
  }

  // ---------------------------------------------------------------- answers

  /**
   * Answers with a message (ephemeral when asked). Resolves with the message when
   * Discord says which it is (the reply's own message, or the edited deferral).
   */
  reply(body: MessageBody, opts: ReplyOptions = {}): Promise<APIMessage | undefined> {
    const flags = withEphemeral(body.flags, opts.ephemeral);
    const data = withDefaults({ ...body, ...(flags !== undefined ? { flags } : {}) });
    return this.#run(async () => {
      if (this.#state === 'new') {
        return this.#first(
          async () =>
            (await this.#api.reply(this.id, this.token, { ...data, with_response: true }))?.resource
              ?.message ?? undefined,
          () => (this.#state = 'replied'),
          true,
        );
      }
      if (this.#state === 'deferred') {
        this.#state = 'replied';
        return this.#fillDeferral(data, isEphemeral(flags));
      }
      // After an answer: a new message.
      return this.#webhook(() => this.#followUp(data));
    });
  }

  /** Acknowledges now, answering later (`reply`/`editReply` fill the "thinking…" message). */
  deferReply(opts: ReplyOptions = {}): Promise<void> {
    const ephemeral = opts.ephemeral ?? false;
    return this.#run(async () => {
      if (this.#state === 'deferred') {
        // Acknowledged for it already, maybe not as asked: its answer must still be as private as asked.
        const d = this.#deferral;
        this.#wanted = d?.kind === 'message' && d.ephemeral === ephemeral ? undefined : { ephemeral };
        return;
      }
      if (this.#state !== 'new') return;
      await this.#first(
        () => this.#api.defer(this.id, this.token, ephemeral ? { flags: EPHEMERAL } : {}),
        () => {
          this.#state = 'deferred';
          this.#deferral = { kind: 'message', ephemeral };
        },
      );
    });
  }

  /** Components: acknowledges without changing the message yet. */
  deferUpdate(): Promise<void> {
    return this.#run(async () => {
      if (this.#state !== 'new') return;
      await this.#first(
        () => this.#api.deferMessageUpdate(this.id, this.token),
        () => {
          this.#state = 'deferred';
          this.#deferral = { kind: 'update' };
        },
      );
    });
  }

  /** Components: replaces the message the component sits on. */
  update(body: MessageBody): Promise<APIMessage | undefined> {
    const data = editBody(withDefaults(body));
    return this.#run(async () => {
      if (this.#state === 'new') {
        return this.#first(
          async () =>
            (await this.#api.updateMessage(this.id, this.token, { ...data, with_response: true }))?.resource
              ?.message ?? undefined,
          () => (this.#state = 'replied'),
          true,
        );
      }
      // After a deferred update `@original` is the component's message, whatever replies followed.
      const target = this.#deferral?.kind === 'update' ? '@original' : this.#original;
      if (this.#state === 'deferred') this.#state = 'replied';
      return this.#webhook(() => this.#api.editReply(this.applicationId, this.token, data, target));
    });
  }

  /** Edits the answer (`@original`), or one of its follow-ups. */
  editReply(body: MessageBody, messageId?: string): Promise<APIMessage> {
    const data = editBody(withDefaults(body));
    return this.#run(async () => {
      if (messageId !== undefined) {
        return this.#webhook(() => this.#api.editReply(this.applicationId, this.token, data, messageId));
      }
      if (this.#state === 'deferred') {
        this.#state = 'replied';
        const wanted = this.#wanted;
        if (wanted) {
          const flags = withEphemeral(data.flags, wanted.ephemeral);
          return this.#fillDeferral({ ...data, ...(flags !== undefined ? { flags } : {}) }, wanted.ephemeral);
        }
      }
      return this.#editOriginal(data);
    });
  }

  followUp(body: MessageBody, opts: ReplyOptions = {}): Promise<APIMessage> {
    const flags = withEphemeral(body.flags, opts.ephemeral);
    const data = withDefaults({ ...body, ...(flags !== undefined ? { flags } : {}) });
    return this.#run(() => this.#webhook(() => this.#followUp(data)));
  }

  deleteReply(messageId?: string): Promise<void> {
    return this.#run(() =>
      this.#webhook(() => this.#api.deleteReply(this.applicationId, this.token, messageId ?? this.#original)),
    );
  }

  /** Opens a form: only as the first answer (Discord allows nothing else). */
  showModal(modal: APIModalInteractionResponseCallbackData): Promise<void> {
    return this.#run(async () => {
      if (this.#state !== 'new') throw new TooLateError('a form');
      await this.#first(
        async () => {
          const inline = this.#transport.answerInline;
          if (inline) await inline({ type: InteractionResponseType.Modal, data: modal });
          else await this.#api.createModal(this.id, this.token, modal);
        },
        () => (this.#state = 'replied'),
      );
    });
  }

  /** Autocomplete choices (dropped when too late: the member has typed on). */
  respond(choices: APIApplicationCommandOptionChoice[]): Promise<void> {
    return this.#run(async () => {
      if (this.#state !== 'new') return;
      await this.#first(
        async () => {
          const inline = this.#transport.answerInline;
          if (inline) {
            await inline({
              type: InteractionResponseType.ApplicationCommandAutocompleteResult,
              data: { choices },
            });
          } else await this.#api.createAutocompleteResponse(this.id, this.token, { choices });
        },
        () => (this.#state = 'replied'),
      );
    });
  }

  /** Stops the acknowledgement timer (the handler is done or the interaction dropped). */
  dispose(): void {
    clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    const unanswered = this.#transport.unanswered;
    // After any answer still on its way: only an interaction nothing answered is reported (one
    // another run answered gets its HTTP request closed too; Discord ignores that answer).
    if (unanswered)
      void this.#run(async () => (this.#firstReported ? undefined : unanswered())).catch(() =>
        this.#firstReported ? undefined : unanswered(),
      );
  }

  // ---------------------------------------------------------------- internals

  #runQuietly(fn: () => Promise<void>): Promise<void> {
    return this.#run(fn).catch(() => undefined);
  }

  #run<T>(fn: () => Promise<T>): Promise<T> {
    const guarded = (): Promise<T> => {
      if (this.#foreign) throw this.#foreign;
      return fn();
    };
    const next = this.#chain.then(guarded, guarded);
    this.#chain = next.catch(() => undefined);
    return next;
  }

  /**
   * The handler's first callback; `taken` records what it made of the interaction. A 40060
   * ("already acknowledged") is our own answer only after a callback of ours may have been
   * taken: REST's retry of a callback whose answer was lost (or an earlier callback that
   * failed without Discord's word). That answer stands, and a message answer resolves with
   * the original message (`fetchOriginal`). Otherwise another run answered this interaction
   * (a replayed delivery): it is not ours to act on, and nothing more is sent for it.
   */
  async #first<T>(
    send: () => Promise<T>,
    taken: () => void,
    fetchOriginal = false,
  ): Promise<T | APIMessage | undefined> {
    try {
      const out = await send();
      taken();
      this.#acknowledged();
      return out;
    } catch (err) {
      if (err instanceof DiscordAPIError && err.code === ALREADY_ACKNOWLEDGED) {
        if (!this.#ours()) {
          this.#foreign = err;
          clearTimeout(this.#ackTimer);
          this.#logger.warn(
            { interactionId: this.id },
            'interaction already answered elsewhere (a replayed delivery?); not acting on it',
          );
          throw err;
        }
        this.#logger.info({ interactionId: this.id }, 'callback taken by Discord before its answer was lost');
        taken();
        this.#acknowledged();
        if (!fetchOriginal) return undefined;
        return this.#api.getOriginalReply(this.applicationId, this.token).catch(() => undefined);
      }
      // Not answered by Discord (a network failure, a 5xx after REST's retries): it may have been taken.
      if (!(err instanceof DiscordAPIError)) this.#callbackMaybeTaken = true;
      // Not accepted: the acknowledgement timer, still armed, answers in time if nothing else does.
      throw err;
    }
  }

  /** A 40060 now answers a callback of ours that Discord may have taken earlier. */
  #ours(): boolean {
    return this.#callbackMaybeTaken || this.#callbackRetried(this.id);
  }

  /**
   * The handler's answer to a deferral: an edit of the deferred message when it has the
   * visibility asked for; else (Discord keeps a deferral's visibility for an edit, and a
   * deferred update has no message of its own) a follow-up with the right visibility takes
   * its place, the deferred message going first.
   */
  async #fillDeferral(data: MessageBody, ephemeral: boolean): Promise<APIMessage> {
    const d = this.#deferral;
    this.#wanted = undefined;
    if (d?.kind === 'message' && d.ephemeral === ephemeral) return this.#editOriginal(data);
    if (d?.kind === 'message') {
      await this.#webhook(() => this.#api.deleteReply(this.applicationId, this.token, this.#original)).catch(
        () => undefined,
      );
    }
    const msg = await this.#webhook(() => this.#followUp(data));
    this.#original = msg.id;
    return msg;
  }

  /**
   * One follow-up message. Discord allows an app only 5 per interaction when the member's own
   * install brought it (no server install: `authorizing_integration_owners` has no "0"): the
   * 6th is refused here (40094) instead of spending a request Discord would refuse.
   */
  #followUp(data: MessageBody): Promise<APIMessage> {
    if (this.#userInstallOnly && this.#followUps >= MAX_USER_INSTALL_FOLLOW_UPS) {
      return Promise.reject(new FollowUpLimitError());
    }
    this.#followUps++;
    return this.#api.followUp(this.applicationId, this.token, data);
  }

  #acknowledged(): void {
    clearTimeout(this.#ackTimer);
    if (this.#firstReported) return;
    this.#firstReported = true;
    this.#transport.firstCallbackDone?.();
    this.#onFirstAnswer?.();
  }

  #editOriginal(data: MessageBody): Promise<APIMessage> {
    // A reply filling a deferral is an edit too: a card clears the classic fields (editBody).
    const body = editBody(data);
    return this.#webhook(() => this.#api.editReply(this.applicationId, this.token, body, this.#original));
  }

  /** A webhook call; right after an acknowledgement in the HTTP response, "unknown" is retried briefly. */
  async #webhook<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await call();
        this.#cold = false;
        return out;
      } catch (err) {
        const unknown = err instanceof DiscordAPIError && (err.code === 10015 || err.code === 10008);
        if (!this.#cold || !unknown || attempt >= 4) throw err;
        await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
      }
    }
  }

  /** Nothing answered in time: a deferral now, in the HTTP response when there is one. */
  #autoAck(): Promise<void> {
    // Nothing to acknowledge once another run answered (the chain refuses).
    return this.#runQuietly(async () => {
      if (this.#state !== 'new') return;
      const body = this.#deferralBody();
      this.#logger.info(
        { interactionId: this.id, type: this.type },
        'interaction slow to answer: acknowledged for it',
      );
      if (this.raw.type === InteractionType.ApplicationCommandAutocomplete) {
        this.#state = 'replied';
      } else if (body.type === InteractionResponseType.DeferredMessageUpdate) {
        this.#state = 'deferred';
        this.#deferral = { kind: 'update' };
      } else {
        this.#state = 'deferred';
        this.#deferral = { kind: 'message', ephemeral: this.#ephemeralByDefault };
      }
      this.#firstReported = true;
      // Answered on the handler's behalf: the work waiting for owed answers need not wait for it.
      this.#onFirstAnswer?.();
      if (this.#transport.ackInResponse) {
        this.#cold = true;
        await this.#transport.ackInResponse(body);
        return;
      }
      try {
        await this.#sendAck(body);
      } catch (err) {
        if (err instanceof DiscordAPIError && err.code === ALREADY_ACKNOWLEDGED) {
          // Answered by another run, not by a lost acknowledgement of ours: its message is not ours to fill.
          if (!this.#ours()) this.#foreign = err;
        } else {
          if (!(err instanceof DiscordAPIError)) this.#callbackMaybeTaken = true;
          this.#logger.warn({ err, interactionId: this.id }, 'could not acknowledge a slow interaction');
        }
      }
    });
  }

  /** The acknowledgement through the callback endpoint (gateway mode). */
  async #sendAck(body: APIInteractionResponse): Promise<void> {
    switch (body.type) {
      case InteractionResponseType.ApplicationCommandAutocompleteResult:
        await this.#api.createAutocompleteResponse(this.id, this.token, { choices: [] });
        return;
      case InteractionResponseType.DeferredMessageUpdate:
        await this.#api.deferMessageUpdate(this.id, this.token);
        return;
      default:
        await this.#api.defer(this.id, this.token, this.#ephemeralByDefault ? { flags: EPHEMERAL } : {});
    }
  }

  #deferralBody(): APIInteractionResponse {
    switch (this.raw.type) {
      case InteractionType.ApplicationCommandAutocomplete:
        return { type: InteractionResponseType.ApplicationCommandAutocompleteResult, data: { choices: [] } };
      case InteractionType.MessageComponent:
        return { type: InteractionResponseType.DeferredMessageUpdate };
      case InteractionType.ModalSubmit:
        // A form opened from a component answers as that component: its message stays the one to update.
        if (this.raw.message) return { type: InteractionResponseType.DeferredMessageUpdate };
        return this.#deferredReplyBody();
      default:
        return this.#deferredReplyBody();
    }
  }

  #deferredReplyBody(): APIInteractionResponse {
    return {
      type: InteractionResponseType.DeferredChannelMessageWithSource,
      ...(this.#ephemeralByDefault ? { data: { flags: EPHEMERAL } } : {}),
    };
  }
}

/** A submitted form's values: text inputs and uploaded files (file-upload fields inside labels). */
export class ModalFields {
  readonly #values = new Map<string, string | string[]>();
  readonly #attachments: Record<string, APIAttachment>;

  constructor(data: APIModalSubmission | undefined) {
    this.#attachments = data?.resolved?.attachments ?? {};
    for (const c of data?.components ?? []) {
      if (c.type === ComponentType.ActionRow) {
        for (const input of c.components) this.#values.set(input.custom_id, input.value);
      } else if (c.type === ComponentType.Label) {
        const inner = c.component;
        if ('value' in inner && typeof inner.value === 'string')
          this.#values.set(inner.custom_id, inner.value);
        else if ('values' in inner) this.#values.set(inner.custom_id, [...inner.values]);
      }
    }
  }

  getTextInputValue(customId: string): string {
    const v = this.#values.get(customId);
    return typeof v === 'string' ? v : '';
  }

  /** The attachments a file-upload field received (none when the field is absent). */
  getUploadedFiles(customId: string): APIAttachment[] {
    const v = this.#values.get(customId);
    if (!Array.isArray(v)) return [];
    return v.map((id) => this.#attachments[id]).filter((a): a is APIAttachment => a !== undefined);
  }
}

function parsePermissions(p: string | undefined): bigint | undefined {
  if (p === undefined) return undefined;
  try {
    return BigInt(p);
  } catch {
    return undefined;
  }
}

function withEphemeral(flags: number | undefined, ephemeral: boolean | undefined): number | undefined {
  if (ephemeral === undefined) return flags;
  const base = flags ?? 0;
  return ephemeral ? base | EPHEMERAL : base & ~EPHEMERAL;
}

/** Mentions ping no one unless a body says otherwise. */
function withDefaults(body: MessageBody): MessageBody {
  return body.allowed_mentions ? body : { ...body, allowed_mentions: { parse: [] } };
}

/** Whether a member's permissions (in the interaction's server) include `flag`. */
export function hasPermission(perms: bigint | undefined, flag: bigint): boolean {
  return perms !== undefined && (perms & flag) === flag;
}
