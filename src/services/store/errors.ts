import type { MessageKey } from '../../i18n/index.js';

/** The catalog key of what a member reads when the store is down, whatever they were doing. */
export const STORE_DOWN_TEXT = 'errors.store_down' satisfies MessageKey;

/**
 * The job store's backend (Redis or SQLite) failed, timed out or is unreachable.
 * Callers map it to 503 / "try again later"; the original failure is kept as `cause`
 * (never carries job secrets: see keyv-store.ts).
 */
export class StoreUnavailableError extends Error {
  readonly code = 'STORE_UNAVAILABLE';
  /** What a member reads (every command, button and the HTTP answer: one wording). */
  readonly memberText = STORE_DOWN_TEXT;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export function isStoreUnavailableError(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}

/** name/message/code only (never the error's other properties), secrets scrubbed, bounded length. */
export function describeError(
  error: unknown,
  secrets: readonly string[] = [],
): { name: string; message: string; code?: string } {
  const name = error instanceof Error ? error.name : typeof error;
  let message = error instanceof Error ? error.message : typeof error === 'string' ? error : 'unknown error';
  if (message === '' && error instanceof AggregateError) {
    message = error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join('; ');
  }
  for (const secret of secrets) if (secret !== '') message = message.split(secret).join('[redacted]');
  if (message.length > 300) message = `${message.slice(0, 300)}…`;
  const code =
    error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  return code === undefined ? { name, message } : { name, message, code };
}
