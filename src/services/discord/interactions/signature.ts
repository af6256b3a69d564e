import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/**
 * Discord signs every HTTP interaction with the application's Ed25519 key:
 * `X-Signature-Ed25519` = hex signature of `X-Signature-Timestamp + raw body`.
 * Node's own crypto verifies Ed25519 (no extra dependency); the raw 32-byte
 * public key becomes a KeyObject through its SPKI DER form (fixed 12-byte prefix).
 */

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** Oldest/newest timestamp accepted, against replays of a captured request. */
export const DEFAULT_MAX_SKEW_MS = 5 * 60_000;

/** `hex`: the Developer Portal's Public Key (64 hex characters). Throws on anything else. */
export function ed25519PublicKey(hex: string): KeyObject {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('an Ed25519 public key is 64 hex characters');
  return createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(hex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
}

export type SignatureCheck =
  { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'stale' | 'invalid' };

export interface SignatureInput {
  signature: string | undefined;
  timestamp: string | undefined;
  rawBody: Buffer;
}

/**
 * Checks one request. `timestamp` is Unix seconds (Discord's format); one further
 * than `maxSkewMs` from `nowMs` is refused even with a valid signature.
 */
export function verifyInteractionSignature(
  key: KeyObject,
  input: SignatureInput,
  nowMs: number,
  maxSkewMs = DEFAULT_MAX_SKEW_MS,
): SignatureCheck {
  const { signature, timestamp, rawBody } = input;
  if (!signature || !timestamp) return { ok: false, reason: 'missing' };
  if (!/^[0-9a-fA-F]{128}$/.test(signature) || !/^\d{1,12}$/.test(timestamp)) {
    return { ok: false, reason: 'malformed' };
  }
  if (Math.abs(nowMs - Number(timestamp) * 1000) > maxSkewMs) return { ok: false, reason: 'stale' };
  const signed = Buffer.concat([Buffer.from(timestamp, 'utf8'), rawBody]);
  const ok = verify(null, signed, key, Buffer.from(signature, 'hex'));
  return ok ? { ok: true } : { ok: false, reason: 'invalid' };
}
