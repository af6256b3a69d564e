import {
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  type APIInteraction,
  type APIInteractionResponse,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { STORE_DOWN_TEXT } from '../../store/errors.js';
import { withTimeout } from './interaction-claim.js';
import { translatorFor, type Translator } from '../../../i18n/index.js';

/**
 * Interactions received over HTTP (`DISCORD_INTERACTIONS=http`): the HTTP side of
 * the exchange. The command code answers through the callback endpoint exactly as
 * over the gateway (BotInteraction); this holds the HTTP request open until that
 * first callback was accepted, then answers it 202 — Discord documents "the
 * callback endpoint, then a 202 and no body" beside "the answer in the body".
 * Answers nothing follows (autocomplete choices, a form) and the acknowledgement
 * of a late command go in the HTTP response body instead.
 *
 * Each interaction is handled once: its id is claimed in the store first (shared
 * by every instance), so a second delivery is answered 202 without running anything.
 */

export type HttpReply =
  /**
   * The answer is this body. `sent`, when present, must be called once the response
   * has been written (the late answer waits for Discord to hold the acknowledgement).
   */
  | { status: 200; body: APIInteractionResponse; sent?: () => void }
  /** The answer went through the callback endpoint (or, `duplicate`, was already given). */
  | { status: 202; duplicate?: true };

/** Hooks an interaction needs from the HTTP request it came in (see BotInteraction's AckTransport). */
export interface HttpExchange {
  ackInResponse(body: APIInteractionResponse): Promise<void>;
  answerInline(body: APIInteractionResponse): Promise<void>;
  firstCallbackDone(): void;
  unanswered(): void;
}

export interface HttpEndpointDeps {
  logger: Logger;
  /** Claims an interaction id across instances: true the first time, false for a duplicate. */
  claim(interactionId: string): Promise<boolean>;
  /** Runs the interaction through the command code; it answers through the exchange's hooks. */
  run(raw: APIInteraction, exchange: HttpExchange, receivedAt: number): void;
  /** The claim gets this long (default 1500 ms) before the interaction is answered "unavailable". */
  claimTimeoutMs?: number;
}

/** How long an acknowledgement's HTTP response may take to be written before the late answer goes anyway. */
const ACK_SENT_WAIT_MS = 3000;

export class HttpInteractionEndpoint {
  readonly #deps: HttpEndpointDeps;
  /** Requests still open (how to answer each, and its interaction type), answered with an apology on shutdown. */
  readonly #open = new Map<(r: HttpReply) => void, { type: InteractionType; tr: Translator }>();
  #closed = false;

  constructor(deps: HttpEndpointDeps) {
    this.#deps = deps;
  }

  /** HTTP requests waiting for their interaction's first answer. */
  get size(): number {
    return this.#open.size;
  }

  close(): void {
    this.#closed = true;
    // Each in its own type's terms: an autocomplete takes only choices.
    for (const [reply, { type, tr }] of [...this.#open])
      reply({ status: 200, body: apologyFor(type, tr.t('errors.http.restarting')) });
    this.#open.clear();
  }

  /** Runs one verified interaction; resolves with the HTTP answer for Discord. */
  async handle(raw: APIInteraction): Promise<HttpReply> {
    if (raw.type === InteractionType.Ping)
      return { status: 200, body: { type: InteractionResponseType.Pong } };
    const log = this.#deps.logger.child({ interactionId: raw.id, kind: raw.type });
    // Apologies too speak the member's language (else the server's, else English).
    const tr = translatorFor(raw);
    if (this.#closed) return { status: 200, body: apologyFor(raw.type, tr.t('errors.http.restarting')) };
    const receivedAt = Date.now();
    let first: boolean;
    try {
      first = await withTimeout(this.#deps.claim(raw.id), this.#deps.claimTimeoutMs ?? 1500);
    } catch (err) {
      // Without the store nothing can run (jobs, sessions, settings all live there): say so now.
      log.warn({ err }, 'store unavailable; interaction answered with an apology');
      return { status: 200, body: apologyFor(raw.type, tr.t(STORE_DOWN_TEXT)) };
    }
    if (!first) {
      log.info('duplicate interaction delivery; not run again');
      return { status: 202, duplicate: true };
    }
    return new Promise<HttpReply>((resolve) => {
      let settled = false;
      const reply = (r: HttpReply): boolean => {
        if (settled) return false;
        settled = true;
        this.#open.delete(reply);
        resolve(r);
        return true;
      };
      this.#open.set(reply, { type: raw.type, tr });
      const exchange: HttpExchange = {
        async ackInResponse(body) {
          let sent!: () => void;
          const written = new Promise<void>((r) => (sent = r));
          if (!reply({ status: 200, body, sent })) return;
          // Bounded: a response that never finishes writing must not hold the late answer forever.
          await Promise.race([written, new Promise((r) => setTimeout(r, ACK_SENT_WAIT_MS).unref())]);
        },
        async answerInline(body) {
          reply({ status: 200, body });
        },
        firstCallbackDone() {
          reply({ status: 202 });
        },
        unanswered() {
          if (reply({ status: 200, body: apologyFor(raw.type, tr.t('errors.http.failed')) }))
            log.warn('no answer of the handler reached Discord; the HTTP response apologises');
        },
      };
      try {
        this.#deps.run(raw, exchange, receivedAt);
      } catch (err) {
        log.error({ err }, 'could not run the interaction');
        reply({ status: 200, body: apologyFor(raw.type, tr.t('errors.http.unreadable')) });
      }
    });
  }
}

/** An ephemeral apology as the HTTP answer (autocomplete: no choices). */
export function apologyFor(type: InteractionType, content: string): APIInteractionResponse {
  if (type === InteractionType.ApplicationCommandAutocomplete) {
    return { type: InteractionResponseType.ApplicationCommandAutocompleteResult, data: { choices: [] } };
  }
  return {
    type: InteractionResponseType.ChannelMessageWithSource,
    data: { content, flags: MessageFlags.Ephemeral, allowed_mentions: { parse: [] } },
  };
}
