import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ConsentStore } from '../src/services/training/consent-store.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import { REDIS_URL } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

const logger = pino({ level: 'silent' });

const hash = (): string => randomBytes(32).toString('hex');

const dirs: string[] = [];
const opened: Stores[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function stores(backend: 'sqlite' | 'redis', namespace: string): Promise<Stores> {
  const dataDir = await mkdtemp(join(tmpdir(), 'consent-'));
  dirs.push(dataDir);
  const s = await createStores({
    operations: jobOperations,
    ...(backend === 'redis' ? { redisUrl: REDIS_URL } : {}),
    dataDir,
    namespace,
    logger,
  });
  opened.push(s);
  return s;
}

for (const backend of ['sqlite', 'redis'] as const)
  describe(`ConsentStore on ${backend}`, backend === 'redis' ? needs('redis') : {}, () => {
    it('records, lists only the member’s own records, expires them, minimizes and deletes', async () => {
      const ns = `consent${randomBytes(4).toString('hex')}`;
      const { kv } = await stores(backend, ns);
      let now = 1_700_000_000_000;
      // Short retention so nothing outlives the test in a shared Redis.
      const store = new ConsentStore({ kv, retentionMs: 60_000, now: () => now });
      const images = [hash(), hash(), hash()];
      const a = await store.record({
        userId: '111',
        guildId: '900',
        channelId: '800',
        jobId: 'job-a',
        wording: 'consent-v1',
        language: 'de',
        sha256: images,
      });
      expect(a).toMatchObject({
        userId: '111',
        guildId: '900',
        channelId: '800',
        jobId: 'job-a',
        at: now,
        wording: 'consent-v1',
        language: 'de',
        photoCount: 3,
        sha256: images,
        expiresAt: now + 60_000,
      });
      now += 1000;
      const b = await store.record({
        userId: '111',
        jobId: 'job-b',
        wording: 'consent-v1',
        sha256: [hash()],
      });
      await store.record({ userId: '222', jobId: 'job-c', wording: 'consent-v1', sha256: [hash()] });

      expect((await store.listByMember('111')).map((r) => r.id)).toEqual([a.id, b.id]);
      expect((await store.listByMember('222')).map((r) => r.jobId)).toEqual(['job-c']);
      expect(await store.listByMember('333')).toEqual([]);

      // Minimized: only what proves the consent stays.
      expect(await store.minimizeForMember('111')).toBe(2);
      const [minA] = await store.listByMember('111');
      expect(minA).toEqual({
        v: 1,
        id: a.id,
        userId: '111',
        guildId: '900',
        at: a.at,
        wording: 'consent-v1',
        // The language the wording was shown in is part of the proof.
        language: 'de',
        photoCount: 3,
        sha256: images,
        expiresAt: a.expiresAt,
        minimized: true,
      });

      // Expiry: each record on its own.
      now = a.expiresAt;
      expect((await store.listByMember('111')).map((r) => r.id)).toEqual([b.id]);

      expect(await store.deleteForMember('111')).toBe(1);
      expect(await store.listByMember('111')).toEqual([]);
      expect(await store.listByMember('222')).toHaveLength(1);
    });

    it('records written at once by two store instances are all kept', async () => {
      const ns = `consent${randomBytes(4).toString('hex')}`;
      const first = await stores(backend, ns);
      // Redis: a second instance on the same namespace; SQLite serves one process (its file lock), so the same store.
      const second = backend === 'redis' ? await stores(backend, ns) : first;
      const one = new ConsentStore({ kv: first.kv, retentionMs: 60_000 });
      const two = new ConsentStore({ kv: second.kv, retentionMs: 60_000 });
      const written = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 === 0 ? one : two).record({
            userId: '444',
            jobId: `job-${i}`,
            wording: 'consent-v1',
            sha256: [hash()],
          }),
        ),
      );
      const listed = await one.listByMember('444');
      expect(listed.map((r) => r.id).sort()).toEqual(written.map((r) => r.id).sort());
    });

    it('refuses a non-positive retention', () => {
      expect(() => new ConsentStore({ kv: {} as never, retentionMs: 0 })).toThrow(RangeError);
    });
  });
