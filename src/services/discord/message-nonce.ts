import { createHash } from 'node:crypto';

/** The messages the bot creates once per job with the bot token. */
export type OncePerJobMessage = 'gallery' | 'thread';

/**
 * The nonce of a message the bot creates once per job: the same from every instance and
 * every attempt (Discord takes at most 25 characters). Sent with `enforce_nonce`, so a
 * repeat within Discord's window ("the past few minutes": REST retrying a 5xx or a timeout
 * whose request Discord had taken, or the job's next owner after a crash) is answered
 * with the first message instead of creating a second one.
 */
export function jobMessageNonce(kind: OncePerJobMessage, jobId: string): string {
  return createHash('sha256').update(`${kind}:${jobId}`).digest('base64url').slice(0, 25);
}
