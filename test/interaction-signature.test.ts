import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ed25519PublicKey,
  verifyInteractionSignature,
} from '../src/services/discord/interactions/signature.js';

const pair = () => generateKeyPairSync('ed25519');
const hexOf = (k: ReturnType<typeof pair>['publicKey']) => {
  const der = k.export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32).toString('hex');
};

const app = pair();
const key = ed25519PublicKey(hexOf(app.publicKey));
const NOW = 1_800_000_000_000;
const ts = String(NOW / 1000);
const body = Buffer.from('{"type":1,"id":"123","application_id":"456"}');
const sig = (t: string, b: Buffer, k = app.privateKey) =>
  sign(null, Buffer.concat([Buffer.from(t), b]), k).toString('hex');

describe('verifyInteractionSignature (Ed25519 over timestamp + raw body)', () => {
  it('accepts what the application key signed', () => {
    expect(
      verifyInteractionSignature(key, { signature: sig(ts, body), timestamp: ts, rawBody: body }, NOW),
    ).toEqual({
      ok: true,
    });
  });

  it('refuses a missing signature or timestamp', () => {
    expect(
      verifyInteractionSignature(key, { signature: undefined, timestamp: ts, rawBody: body }, NOW),
    ).toEqual({
      ok: false,
      reason: 'missing',
    });
    expect(
      verifyInteractionSignature(key, { signature: sig(ts, body), timestamp: undefined, rawBody: body }, NOW),
    ).toEqual({
      ok: false,
      reason: 'missing',
    });
  });

  it('refuses signatures that are not 64 hex bytes, and timestamps that are not Unix seconds', () => {
    for (const signature of ['zz', sig(ts, body).slice(2), `${sig(ts, body)}00`, 'g'.repeat(128)]) {
      expect(verifyInteractionSignature(key, { signature, timestamp: ts, rawBody: body }, NOW).ok).toBe(
        false,
      );
    }
    expect(
      verifyInteractionSignature(key, { signature: sig('1.5', body), timestamp: '1.5', rawBody: body }, NOW),
    ).toEqual({
      ok: false,
      reason: 'malformed',
    });
  });

  it('refuses a tampered body, a flipped signature bit, another timestamp and another key', () => {
    const s = sig(ts, body);
    const tampered = Buffer.from(body.toString().replace('123', '124'));
    expect(verifyInteractionSignature(key, { signature: s, timestamp: ts, rawBody: tampered }, NOW)).toEqual({
      ok: false,
      reason: 'invalid',
    });
    const flipped = `${s.slice(0, -1)}${s.endsWith('0') ? '1' : '0'}`;
    expect(
      verifyInteractionSignature(key, { signature: flipped, timestamp: ts, rawBody: body }, NOW).ok,
    ).toBe(false);
    const other = String(NOW / 1000 + 1);
    expect(verifyInteractionSignature(key, { signature: s, timestamp: other, rawBody: body }, NOW).ok).toBe(
      false,
    );
    const foreign = sig(ts, body, pair().privateKey);
    expect(
      verifyInteractionSignature(key, { signature: foreign, timestamp: ts, rawBody: body }, NOW),
    ).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  it('refuses a valid signature with a timestamp more than 5 minutes off, either way; accepts within', () => {
    for (const offset of [-301, 301, -86_400]) {
      const t = String(NOW / 1000 + offset);
      expect(
        verifyInteractionSignature(key, { signature: sig(t, body), timestamp: t, rawBody: body }, NOW),
      ).toEqual({
        ok: false,
        reason: 'stale',
      });
    }
    for (const offset of [-299, 299]) {
      const t = String(NOW / 1000 + offset);
      expect(
        verifyInteractionSignature(key, { signature: sig(t, body), timestamp: t, rawBody: body }, NOW).ok,
      ).toBe(true);
    }
  });

  it('accepts an uppercase hex key and signature; refuses a key that is not 32 hex bytes', () => {
    const upper = ed25519PublicKey(hexOf(app.publicKey).toUpperCase());
    expect(
      verifyInteractionSignature(
        upper,
        { signature: sig(ts, body).toUpperCase(), timestamp: ts, rawBody: body },
        NOW,
      ).ok,
    ).toBe(true);
    expect(() => ed25519PublicKey('abc')).toThrow(/64 hex/);
    expect(() => ed25519PublicKey('x'.repeat(64))).toThrow(/64 hex/);
  });
});
