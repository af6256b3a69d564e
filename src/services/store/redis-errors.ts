/**
 * What a Redis failure says, for the start-up wait (./wait-for-redis.ts) and the
 * start-failure line (src/start-errors.ts) alike.
 */
import { errorChain, messageOf } from '../shared/error-chain.js';

/** A Redis URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(unparseable URL)';
  }
}

/** Refused credentials anywhere in the chain: waiting cannot fix them. */
export function isRedisAuthError(err: unknown): boolean {
  return errorChain(err).some((e) => /WRONGPASS|NOAUTH|invalid username-password|NOPERM/i.test(messageOf(e)));
}
