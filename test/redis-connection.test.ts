/**
 * Issue 35: every Redis connection of the bot (start-up check, store, queues) shares one
 * node-redis client class. Each distinct `createClient` configuration built a class of ~1,000
 * command methods (~17 MiB allocated, all of it old-generation garbage at start); duplicates
 * of one client take its class, whatever their own options. No Redis needed: nothing connects.
 */
import { createClient } from '@redis/client';
import { describe, expect, it } from 'vitest';
import { SCRIPTS } from '../src/services/store/lua-scripts.js';
import { redisConnection } from '../src/services/store/redis-connection.js';
import { startHarness } from './helpers/harness.js';
import { privateRedis } from './helpers/private-redis.js';
import { needs } from './helpers/requirements.js';

const classOf = (client: object): unknown => Object.getPrototypeOf(Object.getPrototypeOf(client)).constructor;

describe('redisConnection', () => {
  it('gives the store, the queues and the start-up check one client class, with their own options', () => {
    const url = 'redis://127.0.0.1:1';
    const startCheck = redisConnection(url, {
      disableOfflineQueue: true,
      socket: { connectTimeout: 2000, reconnectStrategy: false },
    });
    const store = redisConnection(url, {
      disableOfflineQueue: true,
      socket: { connectTimeout: 5000, reconnectStrategy: () => 100 },
    });
    const queues = redisConnection(url, { socket: { reconnectStrategy: () => 100 } });
    expect(classOf(store)).toBe(classOf(startCheck));
    expect(classOf(queues)).toBe(classOf(store));
    // Each keeps its own options…
    expect(store.options?.socket).toMatchObject({ connectTimeout: 5000 });
    expect(startCheck.options?.socket).toMatchObject({ connectTimeout: 2000, reconnectStrategy: false });
    expect(queues.options?.disableOfflineQueue).not.toBe(true);
    // …and every one can run the bot's Lua scripts (the store calls them as methods).
    for (const client of [startCheck, store, queues])
      for (const name of Object.keys(SCRIPTS))
        expect(typeof (client as unknown as Record<string, unknown>)[name]).toBe('function');
  });

  it('gives another URL its own client (the URL is the class cache key)', () => {
    const a = redisConnection('redis://127.0.0.1:1');
    const b = redisConnection('redis://127.0.0.1:2');
    expect(a.options?.url).toBe('redis://127.0.0.1:1');
    expect(b.options?.url).toBe('redis://127.0.0.1:2');
  });
});

describe('the bot on Redis', needs('redisServer'), () => {
  // Each adapter BullMQ makes of a node-redis client registers its 64 Lua scripts with a
  // SCRIPT LOAD each (400 KB sent, and its SHA-1 computed): with one adapter per queue and
  // worker the bot loaded them 12 times at every start.
  it("registers BullMQ's Lua scripts once: every queue and worker shares one adapter", async () => {
    const redis = await privateRedis();
    await redis.start();
    const url = `redis://127.0.0.1:${redis.port}`;
    const h = await startHarness({ redis: true, env: { REDIS_URL: url } });
    const probe = createClient({ url });
    try {
      await probe.connect();
      const stats = await probe.info('commandstats');
      const loads = Number(/^cmdstat_script\|load:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
      // BullMQ has 64 scripts; a second adapter would load them all again.
      expect(loads).toBeGreaterThan(0);
      expect(loads).toBeLessThan(2 * 64);
    } finally {
      await probe.quit().catch(() => undefined);
      await h.close();
      await redis.remove();
    }
  });
});
