import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { DiscordHttpError } from './errors.js';
import { isObj, type Json, type JsonObject } from './json.js';
import type { HandlerContext } from './router.js';
import { interactionCallback } from './routes/interactions.js';
import type { FakeState, InteractionState } from './state.js';
import type { RequestRecord } from './types.js';

/**
 * Discord's side of HTTP interactions (an application's Interactions Endpoint
 * URL): an Ed25519 key pair (the public half is what the Developer Portal
 * shows as "Public Key"), and signed POSTs of interaction payloads, headers
 * `X-Signature-Ed25519` (hex signature of timestamp + body) and
 * `X-Signature-Timestamp` (Unix seconds), as Discord sends them.
 */

export type SignatureMode = 'valid' | 'bad' | 'missing' | 'wrong-key' | 'tampered';

export interface PostOptions {
  /** How to sign (default valid). `tampered`: signed, then one byte of the body changed. */
  signature?: SignatureMode;
  /** Unix seconds to sign with (default now): stale ones must be refused. */
  timestamp?: number;
  timeoutMs?: number;
}

export interface HttpDelivery {
  interactionId: string | null;
  status: number;
  /** The parsed JSON body of the bot's answer, when it had one. */
  body: Json | undefined;
  rawBody: string;
  at: number;
  /** Network error (the bot did not answer). */
  error?: string;
  /** What the fake made of the answer (e.g. "202 without a callback"): a Discord-side failure. */
  problem?: string;
}

function rawPublicKeyHex(key: KeyObject): string {
  const der = key.export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32).toString('hex');
}

export class InteractionSigner {
  readonly #keys = generateKeyPairSync('ed25519');
  readonly #otherKeys = generateKeyPairSync('ed25519');
  /** Hex, 64 characters: DISCORD_PUBLIC_KEY. */
  readonly publicKey = rawPublicKeyHex(this.#keys.publicKey);

  headers(body: string, opts: PostOptions = {}): Record<string, string> {
    const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
    const mode = opts.signature ?? 'valid';
    const out: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'Discord-Interactions/1.0 (+https://discord.com)',
    };
    if (mode === 'missing') return out;
    const key = mode === 'wrong-key' ? this.#otherKeys.privateKey : this.#keys.privateKey;
    let signature = sign(null, Buffer.from(timestamp + body), key).toString('hex');
    if (mode === 'bad') signature = `${signature.slice(0, -2)}${signature.endsWith('00') ? '01' : '00'}`;
    out['x-signature-ed25519'] = signature;
    out['x-signature-timestamp'] = timestamp;
    return out;
  }

  /** POSTs `body` to `url` signed as `opts` says; never throws (a network error is recorded). */
  async post(
    url: string,
    body: string,
    interactionId: string | null,
    opts: PostOptions = {},
  ): Promise<HttpDelivery> {
    const headers = this.headers(body, opts);
    const sent =
      opts.signature === 'tampered'
        ? body.replace(/"id":"(\d)/, (_m, d: string) => `"id":"${d === '9' ? '8' : '9'}`)
        : body;
    const at = Date.now();
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: sent,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      });
      const rawBody = await res.text();
      let parsed: Json | undefined;
      try {
        parsed = rawBody === '' ? undefined : (JSON.parse(rawBody) as Json);
      } catch {
        parsed = undefined;
      }
      return { interactionId, status: res.status, body: parsed, rawBody, at };
    } catch (e) {
      return {
        interactionId,
        status: 0,
        body: undefined,
        rawBody: '',
        at,
        error: e instanceof Error ? e.message : String(e),
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Delivery: an interaction POSTed to the bot's Interactions Endpoint URL, and what its answer means.

/** The bot's interactions URL (set with `setInteractionsMode('http', url)`). */
function requireUrl(s: FakeState): string {
  if (!s.interactionsUrl) throw new Error('fake-discord: no interactions URL (setInteractionsMode)');
  return s.interactionsUrl;
}

/**
 * Delivers an interaction as Discord does to an Interactions Endpoint URL: signed
 * POST; a 200 body is the initial response (checked like a callback: spec, type,
 * 3 s deadline, double acknowledgement); a 202 means the bot answered through the
 * callback endpoint, which must then already have happened.
 */
export async function deliverOverHttp(
  s: FakeState,
  state: InteractionState,
  opts: PostOptions = {},
): Promise<HttpDelivery> {
  const delivery = await s.signer.post(requireUrl(s), JSON.stringify(state.payload), state.id, opts);
  s.httpDeliveries.push(delivery);
  if (delivery.status === 200 && isObj(delivery.body)) {
    const problem = applyInlineResponse(s, state, delivery.body);
    if (problem !== undefined) delivery.problem = problem;
  } else if (delivery.status === 202) {
    if (state.callbacks.length === 0) delivery.problem = '202 without a callback: the interaction failed';
  } else {
    delivery.problem = `interaction failed: HTTP ${delivery.status || delivery.error}`;
  }
  s.changed();
  return delivery;
}

/** The bot's HTTP response body as the interaction's initial response; returns what went wrong, if anything. */
function applyInlineResponse(s: FakeState, state: InteractionState, body: JsonObject): string | undefined {
  const template = '/interactions/{interaction_id}/{interaction_token}/callback';
  const path = `/interactions/${state.id}/${state.token}/callback`;
  const record: RequestRecord = {
    seq: ++s.requestSeq,
    method: 'POST',
    path,
    route: template,
    query: {},
    auth: 'none',
    status: 0,
    at: Date.now(),
    clockAt: s.clock.now(),
    body,
    files: [],
    inSpec: true,
    rateLimited: false,
    fault: false,
    response: undefined,
    responseHeaders: {},
  };
  const result = s.validation === 'off' ? undefined : s.spec.validateRequestBody(template, 'POST', body);
  if (result && result.ok === false) {
    s.violations.push({
      source: 'openapi',
      method: 'POST',
      path: `${path} (HTTP response)`,
      route: template,
      operationId: s.spec.operationId(template, 'POST'),
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
    const out = interactionCallback(s, ctx);
    record.status = out.status;
    return undefined;
  } catch (e) {
    if (e instanceof DiscordHttpError) return `HTTP response refused: ${e.status} ${JSON.stringify(e.body)}`;
    throw e;
  }
}

/** A PING, as Discord sends when the Interactions Endpoint URL is saved (and with bad signatures to test it). */
export function sendPing(s: FakeState, opts: PostOptions = {}): Promise<HttpDelivery> {
  const id = s.snowflakes.next();
  const body = JSON.stringify({
    id,
    application_id: s.applicationId,
    type: 1,
    token: `ping-${id}`,
    version: 1,
    user: s.botUser,
  });
  return s.signer.post(requireUrl(s), body, id, opts);
}

/** POSTs any body (signed as `opts` says) to the interactions URL: for malformed-input tests. */
export function postRawInteraction(
  s: FakeState,
  body: string,
  opts: PostOptions = {},
): Promise<HttpDelivery> {
  return s.signer.post(requireUrl(s), body, null, opts);
}
