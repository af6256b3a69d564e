import type { AtomicKeyValueStore } from '../../store/types.js';

/**
 * One run per interaction id, whichever way it arrives and however often: Discord may
 * deliver an HTTP interaction twice, a gateway session replays its dispatches on RESUME,
 * and an instance that lost the gateway may still deliver what its socket held. A run
 * past the first would start a second paid job. The claim is the store's `claim` (first
 * caller wins, atomically: SET NX PX on Redis, one INSERT on SQLite) in the store every
 * instance shares, kept well past an interaction token's 15 minutes.
 */
export const INTERACTION_CLAIM_TTL_MS = 60 * 60_000;
/** How long a claim may take before the interaction is answered "unavailable" (Discord's 3 s). */
export const INTERACTION_CLAIM_TIMEOUT_MS = 1500;

/** true the first time an id is claimed, false for every later delivery. */
export type InteractionClaim = (interactionId: string) => Promise<boolean>;

export function createInteractionClaim(
  kv: Pick<AtomicKeyValueStore, 'claim'>,
  now: () => number,
): InteractionClaim {
  return async (id) =>
    (await kv.claim(`interaction-seen:${id}`, { at: now() }, INTERACTION_CLAIM_TTL_MS)).won;
}

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
