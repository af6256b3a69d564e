import type { REST } from '@discordjs/rest';
import { LRUCache } from 'lru-cache';

const CALLBACK = /^\/interactions\/(\d+)\/[^/]+\/callback$/;

/**
 * Which interactions' callbacks REST had to send more than once (an earlier attempt got
 * a 5xx, a reset or a timeout: Discord may have taken it). Only then is a 40060 ("already
 * acknowledged") our own answer coming back; on a first attempt it means another run
 * answered, and acting on it would start a second job (see BotInteraction).
 */
export function trackCallbackRetries(rest: REST): (interactionId: string) => boolean {
  // An interaction's callbacks all happen within its first 15 minutes.
  const retried = new LRUCache<string, true>({ max: 10_000, ttl: 15 * 60_000 });
  rest.on('response', (request) => {
    if (request.retries === 0) return;
    const id = CALLBACK.exec(String(request.path))?.[1];
    if (id) retried.set(id, true);
  });
  return (id) => retried.has(id);
}
