import { createClient, type RedisClientOptions } from '@redis/client';
import { SCRIPTS } from './lua-scripts.js';

/**
 * Every Redis connection of the process (the start-up check, the store, the queues) is a
 * `duplicate()` of one client per URL, never connected itself. node-redis builds a client
 * class with its ~1,000 command methods for each distinct `createClient` configuration (it
 * caches one): measured 17 MiB allocated per build, ~35 MiB of start-up garbage for the
 * bot's three configurations, left in the old generation until the first full GC (~15 s
 * after start). A duplicate takes the class of its original, whatever its own options.
 * The class carries the bot's Lua scripts (the store calls them as methods).
 */
const bases = new Map<string, ReturnType<typeof base>>();

// RESP 2, node-redis's default, named so the clients' type says it.
const base = (url: string) => createClient({ url, scripts: SCRIPTS, RESP: 2 });

/** A new, unconnected client for `url` with these connection options. */
export function redisConnection(
  url: string,
  options: Pick<RedisClientOptions, 'disableOfflineQueue' | 'socket'> = {},
) {
  let original = bases.get(url);
  if (!original) {
    original = base(url);
    bases.set(url, original);
  }
  return original.duplicate(options);
}
