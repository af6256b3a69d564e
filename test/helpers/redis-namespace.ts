import { createClient } from '@redis/client';

/**
 * Deletes the keys matching `patterns` from a Redis, in one SCAN per pattern. SCAN walks the
 * whole keyspace whatever MATCH says, so a suite clears all its keys in one pass, not one per store.
 */
export async function deleteRedisKeys(url: string, patterns: string[]): Promise<number> {
  const client = createClient({ url });
  await client.connect();
  let deleted = 0;
  try {
    for (const match of patterns) {
      for await (const keys of client.scanIterator({ MATCH: match, COUNT: 10_000 })) {
        if (keys.length > 0) deleted += await client.unlink(keys);
      }
    }
  } finally {
    client.destroy();
  }
  return deleted;
}

/**
 * Deletes a test bot's keys from the shared Redis: the store's (`<namespace>::…`) and BullMQ's
 * (`<namespace>-bull:…`). Tests run on one Redis for the whole suite (CI's may outlive a run), and
 * keys left behind (a /privacy export run left 60,000) make every later SCAN slower: a store
 * suite's cleanup on a Redis holding a million keys timed out its hook.
 */
export function clearRedisNamespace(url: string, namespace: string): Promise<number> {
  return deleteRedisKeys(url, redisNamespacePatterns(namespace));
}

/** The SCAN patterns of a bot's keys under `namespace`: its store's and its BullMQ queues'. */
export function redisNamespacePatterns(namespace: string): string[] {
  return [`${namespace}::*`, `${namespace}-bull:*`];
}
