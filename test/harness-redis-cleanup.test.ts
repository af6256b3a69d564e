import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, startHarness } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';
import { redisNamespacePatterns } from './helpers/redis-namespace.js';

describe('the test harness on Redis leaves no keys behind', needs('redis'), () => {
  const client = createClient({ url: REDIS_URL });
  const keysOf = async (namespace: string): Promise<string[]> => {
    const out: string[] = [];
    for (const match of redisNamespacePatterns(namespace))
      for await (const keys of client.scanIterator({ MATCH: match, COUNT: 1000 })) out.push(...keys);
    return out;
  };
  beforeAll(async () => {
    await client.connect();
  });
  afterAll(() => {
    client.destroy();
  });

  it('its close deletes the store’s and BullMQ’s keys; a bot restarted on its namespace leaves them to it', async () => {
    const h1 = await startHarness({ redis: true });
    const cmd = h1.fake.sendCommand({ name: 'extend-song', options: { task_id: 'fixture-song-task' } });
    await cmd.message(); // a job recorded (or refused): keys in the store's namespace either way
    const before = await keysOf(h1.namespace);
    expect(before.some((k) => k.startsWith(`${h1.namespace}::`))).toBe(true);
    expect(before.some((k) => k.startsWith(`${h1.namespace}-bull:`))).toBe(true);
    await h1.stopBot();
    const h2 = await startHarness({
      redis: true,
      reuse: { fake: h1.fake, emulator: h1.emulator, dataDir: h1.dataDir, namespace: h1.namespace },
    });
    await h2.close();
    expect((await keysOf(h1.namespace)).length).toBeGreaterThan(0); // h2 does not own the namespace
    await h1.close();
    expect(await keysOf(h1.namespace)).toEqual([]);
  });
});
