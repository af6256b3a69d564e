import { errors as undiciErrors } from 'undici';
import { MediaOutcomeUnknownError, MediaServiceError, MediaUnavailableError } from './errors.js';

/**
 * Failures that happen before a single byte of the request can reach the service: no
 * connection was made (refused, unreachable, DNS, connect timeout, TLS handshake). Anything
 * else (a timeout waiting for the answer, a reset or close once connected) may come after
 * the service took the request.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const TLS_HANDSHAKE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
  }
  return codes;
}

/** True when the request certainly never reached the service. */
export function certainlyNotSent(err: unknown): boolean {
  if (err instanceof undiciErrors.ConnectTimeoutError) return true;
  return codesOf(err).some((c) => NOT_SENT_CODES.has(c) || TLS_HANDSHAKE.test(c));
}

/**
 * A transport failure as a typed error. A read can always be asked again, so it is just
 * unavailable; a submission that may have been sent is an unknown outcome (never resent).
 */
export function transportError(err: unknown, path: string, kind: 'submit' | 'read'): MediaServiceError {
  if (err instanceof MediaServiceError) return err;
  // undici may wrap an error thrown by the streamed body.
  if (err instanceof Error && err.cause instanceof MediaServiceError) return err.cause;
  const timedOut =
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError;
  const what = timedOut ? 'timed out' : 'unreachable';
  if (kind === 'submit' && !certainlyNotSent(err)) {
    const how = timedOut ? 'no answer in time' : 'connection lost';
    return new MediaOutcomeUnknownError(`${how} after sending to ${path}`, undefined, { cause: err });
  }
  return new MediaUnavailableError(`media service ${what} on ${path}`, undefined, { cause: err });
}
