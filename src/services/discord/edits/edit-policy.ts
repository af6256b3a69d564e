import { DiscordAPIError, HTTPError, RateLimitError } from '@discordjs/rest';
import { AUTOMOD_CODES } from '../discord-transport.js';
import type { EditKind } from './channel-budget.js';
import type { MessageRef } from '../../shared/message-ref.js';

/**
 * The one edit policy of a job's (or any kept-up-to-date) message: pure rules, no I/O,
 * no clock of its own. The two drivers only schedule what it decides: `EditQueue` (in
 * process, the embedded store) and `BullJobEdits` (BullMQ, Redis). A conformance suite
 * (`test/edit-drivers.test.ts`) runs every case against both.
 *
 * - Route: the interaction webhook while its token is fresh and Discord never refused
 *   it; then the channel message with the bot token; a personal job (the bot is not in
 *   its channel) never uses the bot token there: its final goes by DM instead.
 * - Outcomes: what each Discord answer means for the state that was sent (below).
 * - Finals first: on both routes progress leaves `finalReserve` slots of every window.
 * - What is learned about a message (its token refused, the message gone) is stored
 *   with the job by the driver, so every instance and every later edit knows it: a
 *   dead token is touched at most once per job (Discord bans an IP after 10,000
 *   invalid requests in 10 minutes).
 */

export type EditRoute = 'interaction' | 'channel';
/** Where a state goes: one of the two edit routes, or a new DM to the member (personal jobs' finals). */
export type Delivery = EditRoute | 'dm';
export type EditOutcome =
  'ok' | 'rate_limited' | 'gone' | 'token_invalid' | 'old_message' | 'invalid' | 'error' | 'dm_refused';

export interface EditPolicyOptions {
  /** Interaction tokens live 15 min; stop using them a bit earlier. */
  interactionFreshMs: number;
  /** Interaction route budget: `interactionLimit` edits per `interactionWindowMs` per message. */
  interactionLimit: number;
  interactionWindowMs: number;
  /** Channel route budget (per channel, shared by every message in it). */
  channelLimit: number;
  channelWindowMs: number;
  /** Slots per window that progress edits leave for finals, on each route. */
  finalReserve: number;
  /** Interaction route: minimum gap between two progress edits of a message, from the last answer (a bar moves steadily, not in bursts). */
  progressIntervalMs: number;
  /** Channel route: messages older than this only get their final state (Discord error 30046). */
  oldMessageMs: number;
  /** Failed attempts (5xx, network, 30046) tolerated per progress state before dropping it (finals never give up). */
  finalRetryLimit: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** A personal job still running this long after its interaction says once that its result will come by DM. */
  dmNoticeMs: number;
}

export const DEFAULT_EDIT_POLICY: Readonly<EditPolicyOptions> = {
  interactionFreshMs: 14 * 60_000,
  interactionLimit: 5,
  interactionWindowMs: 5000,
  channelLimit: 5,
  channelWindowMs: 5000,
  finalReserve: 2,
  progressIntervalMs: 1000,
  oldMessageMs: 3_600_000,
  finalRetryLimit: 8,
  baseBackoffMs: 1000,
  maxBackoffMs: 60_000,
  // A minute before the token stops being used: the notice still goes through it.
  dmNoticeMs: 13 * 60_000,
};

/** What is known of a message when a state of it is to be sent. */
export interface MessageFacts {
  ref: MessageRef;
  /** Epoch ms the message was created (the 1 h old-message rule). */
  messageCreatedAt: number;
  /** Discord refused the interaction token once (401, 50027): never again, by anyone. */
  tokenRefused?: boolean;
  /** A personal job's message: the bot is not in that channel (no bot-token route to it). */
  personal?: boolean;
}

export type Route =
  | { route: 'interaction'; applicationId: string; token: string; messageId?: string }
  | { route: 'channel'; channelId: string; messageId: string }
  | { route: 'dm' }
  /** Not now, not this state: a progress edit nobody may send (old message, personal job past its token). */
  | { route: 'skip'; reason: string }
  /** No way at all to show this state (no fresh token and no message id). */
  | { route: 'none'; reason: string };

/** The route for a state of a message at time `now`. */
export function routeFor(m: MessageFacts, now: number, final: boolean, opts: EditPolicyOptions): Route {
  const i = m.ref.interaction;
  if (i && m.tokenRefused !== true && now - i.createdAt < opts.interactionFreshMs) {
    return {
      route: 'interaction',
      applicationId: i.applicationId,
      token: i.token,
      ...(i.messageId ? { messageId: i.messageId } : {}),
    };
  }
  if (m.personal === true) {
    // The bot token never reaches a personal job's channel: the final goes to the member.
    return final ? { route: 'dm' } : { route: 'skip', reason: 'personal job past its interaction token' };
  }
  if (!m.ref.messageId) {
    return { route: 'none', reason: 'interaction token expired or refused and no message id known' };
  }
  if (!final && now - m.messageCreatedAt >= opts.oldMessageMs) {
    // Discord allows only a few edits of messages older than 1 h: keep them for the final.
    return { route: 'skip', reason: 'message older than 1 h: finals only' };
  }
  return { route: 'channel', channelId: m.ref.channelId, messageId: m.ref.messageId };
}

/** Whether a state pushed now would be sent rather than dropped by the routing rules. */
export function editable(m: MessageFacts, now: number, final: boolean, opts: EditPolicyOptions): boolean {
  const r = routeFor(m, now, final, opts).route;
  return r !== 'skip' && r !== 'none';
}

/** Which channel-budget slot a state asks for: finals may use the reserve. */
export const budgetKind = (final: boolean): EditKind => (final ? 'final' : 'progress');

/**
 * Interaction route: when a state of a message may go, given the answer times of its
 * edits in the current window (oldest first). A final may take any free slot; progress
 * leaves `finalReserve` free and is spaced from the last answer, not from when the last
 * edit set off: however late a request reaches Discord, two progress edits arrive at
 * least `progressIntervalMs` apart.
 */
export function interactionReadyAt(
  done: readonly number[],
  final: boolean,
  now: number,
  opts: EditPolicyOptions,
): number {
  const inWindow = done.filter((t) => t > now - opts.interactionWindowMs);
  const cap = final ? opts.interactionLimit : Math.max(1, opts.interactionLimit - opts.finalReserve);
  let readyAt = now;
  if (inWindow.length >= cap) readyAt = (inWindow[inWindow.length - cap] ?? now) + opts.interactionWindowMs;
  const last = done.at(-1);
  if (!final && last !== undefined) readyAt = Math.max(readyAt, last + opts.progressIntervalMs);
  return readyAt;
}

/** When a personal job's "result by DM" notice is due, or undefined when it is not to be sent. */
export function dmNoticeAt(
  job: {
    personal?: true | undefined;
    dmNoticeAt?: number | undefined;
    tokenRefusedAt?: number | undefined;
    final: boolean;
  } & {
    ref: MessageRef;
  },
  opts: EditPolicyOptions,
): number | undefined {
  const i = job.ref.interaction;
  if (job.personal !== true || job.final || job.dmNoticeAt !== undefined) return undefined;
  if (job.tokenRefusedAt !== undefined || !i) return undefined;
  return i.createdAt + opts.dmNoticeMs;
}

// ---------------------------------------------------------------- outcomes

export type Failure =
  | { kind: 'rate_limited'; retryAfterMs: number; global: boolean }
  | { kind: 'gone'; reason: string }
  | { kind: 'token_invalid' }
  | { kind: 'old_message' }
  | { kind: 'automod'; code: number }
  | { kind: 'dm_refused' }
  | { kind: 'invalid'; code: number | string; message: string }
  | { kind: 'transient'; message: string };

/** The metric label of an edit's outcome (an AutoMod refusal counts as invalid). */
export function editOutcome(r: { kind: 'ok' } | Failure): EditOutcome {
  if (r.kind === 'transient') return 'error';
  if (r.kind === 'automod') return 'invalid';
  return r.kind;
}

/** Discord error codes meaning the message can never be edited again. */
const GONE_CODES: ReadonlyMap<number, string> = new Map([
  [10008, 'unknown_message'],
  [10003, 'unknown_channel'],
  [50001, 'missing_access'],
  [50013, 'missing_permissions'],
]);
/** Interaction token expired or invalid: never use it again. */
const INVALID_WEBHOOK_TOKEN = 50027;
const UNKNOWN_WEBHOOK = 10015;
const OLD_MESSAGE_EDIT_LIMIT = 30046;
/** "Cannot send messages to this user": the member's DMs are closed to the bot. */
const CANNOT_DM = 50007;

/** Maps what @discordjs/rest (or the network) threw to what it means for the edit. */
export function classify(err: unknown, route: Delivery): Failure {
  if (err instanceof RateLimitError) {
    // Thrown when the REST is configured with rejectOnRateLimit; retryAfter is in ms.
    return { kind: 'rate_limited', retryAfterMs: Math.max(0, err.retryAfter), global: err.global };
  }
  if (err instanceof DiscordAPIError) {
    const code = typeof err.code === 'number' ? err.code : Number.NaN;
    if (err.status === 429) {
      // Only reachable with a transport that does not sleep on 429 itself; body retry_after is seconds.
      const raw: unknown = err.rawError;
      const seconds =
        typeof raw === 'object' && raw !== null && 'retry_after' in raw && typeof raw.retry_after === 'number'
          ? raw.retry_after
          : 1;
      const global = typeof raw === 'object' && raw !== null && 'global' in raw && raw.global === true;
      return { kind: 'rate_limited', retryAfterMs: seconds * 1000, global };
    }
    if (route === 'dm' && code === CANNOT_DM) return { kind: 'dm_refused' };
    const gone = GONE_CODES.get(code);
    if (gone) return { kind: 'gone', reason: `${gone} (${code})` };
    if (
      route === 'interaction' &&
      (code === INVALID_WEBHOOK_TOKEN || code === UNKNOWN_WEBHOOK || err.status === 401)
    ) {
      return { kind: 'token_invalid' };
    }
    if (code === OLD_MESSAGE_EDIT_LIMIT) return { kind: 'old_message' };
    if (AUTOMOD_CODES.has(code)) return { kind: 'automod', code };
    if (err.status >= 500) return { kind: 'transient', message: err.message };
    // 50035 invalid form body and any other 4xx: the request itself is wrong.
    return { kind: 'invalid', code: err.code, message: err.message };
  }
  if (err instanceof HTTPError) return { kind: 'transient', message: `HTTP ${err.status}` };
  // Network errors, timeouts (AbortError), anything else.
  return { kind: 'transient', message: describeTransient(err) };
}

/** What the driver does about one answer of Discord to a sent state. */
export type Decision =
  /** Shown. A final ends the message's edits (the driver records `finalShown`). */
  | { do: 'done' }
  /** Send the same state again after `delayMs`; `block` shares a 429 with the channel's (or every) budget. */
  | { do: 'retry'; delayMs: number; block?: { channelId: string | undefined }; failure: boolean }
  /** Forget this state (a later one may still go); a final dropped this way ends the message's edits. */
  | { do: 'drop'; level: 'debug' | 'error'; why: string }
  /** The message is gone: record it with the job, no edit of it ever again. */
  | { do: 'gone'; reason: string }
  /** Record the refusal with the job (no one uses the token again), then route the state anew at once. */
  | { do: 'token_refused' }
  /** AutoMod refused the member's text: record it with the job (withheld), whose next render leaves it out. */
  | { do: 'withhold' }
  /** AutoMod refused it even without the member's text: send once more without any free text. */
  | { do: 'bare' }
  /** The member's DMs are closed: record it with the job (its result stays in /tasks) and stop. */
  | { do: 'dm_refused' };

export interface OutcomeContext {
  route: Delivery;
  final: boolean;
  /** Failed sends of this state so far, this one included (5xx, network, 30046; not 429s). */
  attempts: number;
  /** Consecutive failures of this message (the backoff's exponent), this one included. */
  failures: number;
  /** The job's text is withheld already, or the driver has no way to withhold it. */
  withheld: boolean;
  /** This body was already the one without any free text. */
  bare: boolean;
  channelId?: string;
  /** Jitter in [0, 1). */
  random: number;
}

/** What one answer of Discord means (see `Decision`). */
export function decide(
  outcome: { kind: 'ok' } | Failure,
  c: OutcomeContext,
  opts: EditPolicyOptions,
): Decision {
  switch (outcome.kind) {
    case 'ok':
      return { do: 'done' };
    case 'gone':
      return { do: 'gone', reason: outcome.reason };
    case 'token_invalid':
      return { do: 'token_refused' };
    case 'dm_refused':
      return { do: 'dm_refused' };
    case 'rate_limited':
      // The channel edit bucket is per channel, so every message in it waits; not a failure.
      return {
        do: 'retry',
        delayMs: outcome.retryAfterMs,
        failure: false,
        ...(c.route === 'channel' ? { block: { channelId: outcome.global ? undefined : c.channelId } } : {}),
      };
    case 'old_message':
      if (!c.final) return { do: 'drop', level: 'debug', why: 'old-message edit limit (30046)' };
      return retryLater(c, opts);
    case 'automod':
      if (!c.withheld) return { do: 'withhold' };
      if (!c.bare) return { do: 'bare' };
      return { do: 'drop', level: 'error', why: `AutoMod refused the edit (${outcome.code})` };
    case 'invalid':
      // Resending the same body would fail the same way: drop it, never loop.
      return {
        do: 'drop',
        level: 'error',
        why: `Discord rejected the edit (${String(outcome.code)}: ${outcome.message})`,
      };
    case 'transient':
      return retryLater(c, opts);
  }
}

/**
 * Exponential backoff with jitter (capped). A progress state gives up after
 * `finalRetryLimit` attempts (the next state will try); a final never does: it is
 * retried until it lands or the message is gone.
 */
function retryLater(c: OutcomeContext, opts: EditPolicyOptions): Decision {
  if (!c.final && c.attempts > opts.finalRetryLimit)
    return { do: 'drop', level: 'debug', why: 'progress edit dropped after retries' };
  return { do: 'retry', delayMs: backoffMs(c.failures, c.random, opts), failure: true };
}

export function backoffMs(failures: number, random: number, opts: EditPolicyOptions): number {
  const ceiling = Math.min(
    opts.maxBackoffMs,
    opts.baseBackoffMs * 2 ** Math.min(Math.max(0, failures - 1), 16),
  );
  return ceiling / 2 + (random * ceiling) / 2;
}

/** A network error's message, never empty (an AggregateError or an abort has none of its own). */
function describeTransient(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const inner = err instanceof AggregateError ? err.errors[0] : err.cause;
  const own = err.message || err.name;
  const more = inner instanceof Error && inner.message ? ` (${inner.message})` : '';
  return `${own}${typeof code === 'string' ? ` ${code}` : ''}${more}`;
}
