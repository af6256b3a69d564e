import { createHash } from 'node:crypto';

/** The messages the bot creates once per job with the bot token. */
export type OncePerJobMessage = 'gallery' | 'thread' | 'dm';

/**
 * The body fields that make a message the bot creates once per job be created once: a
 * nonce the same from every instance and every attempt (Discord takes at most 25
 * characters), enforced, so a repeat within Discord's window ("the past few minutes":
 * REST retrying a 5xx or a timeout whose request Discord had taken, or the job's next
 * owner after a crash) is answered with the first message instead of creating a second.
 * A nonce alone would only be echoed back.
 */
export function oncePerJob(kind: OncePerJobMessage, jobId: string): { nonce: string; enforce_nonce: true } {
  const nonce = createHash('sha256').update(`${kind}:${jobId}`).digest('base64url').slice(0, 25);
  return { nonce, enforce_nonce: true };
}
