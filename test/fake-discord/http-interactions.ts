import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { Json } from './json.js';

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
