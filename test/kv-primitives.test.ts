import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openBackend, type Backend } from '../src/services/store/backend.js';
import {
  CORRUPT,
  decodeRecord,
  encodeRecord,
  keyvDeserialize,
  keyvSerialize,
  liveValue,
} from '../src/services/store/codec.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import type { JobRecord, KvClaim } from '../src/services/store/types.js';
import { createInteractionClaim } from '../src/services/discord/interactions/interaction-claim.js';
import { RetryGuard } from '../src/services/jobs/retry-guard.js';
import { REDIS_URL } from './helpers/detect.js';
import { needs } from './helpers/requirements.js';

/**
 * The kv port's atomic primitives (`claim`, `update`) and the record format, one suite run
 * on every backend: SQLite, and the Redis at REDIS_URL (skipped, saying so, when none answers).
 * "Two instances" are two store connections on one namespace (on SQLite: one store, as SQLite
 * serves one process).
 */

const RUN_ID = `k${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
let nsCounter = 0;
const logger = pino({ level: 'silent' });

describe('record format (codec)', () => {
  it('is the text previous versions wrote: {"value", "expires"}, no expiry when none', () => {
    expect(encodeRecord({ a: 1 }, 5)).toBe('{"value":{"a":1},"expires":5}');
    expect(encodeRecord('x', undefined)).toBe('{"value":"x"}');
    // What Keyv hands the serializer, and what the deserializer gives it back.
    expect(keyvSerialize({ value: [1], expires: 9 })).toBe('{"value":[1],"expires":9}');
    expect(keyvSerialize({ value: [1] })).toBe('{"value":[1]}');
    expect(keyvDeserialize('{"value":[1],"expires":9}')).toEqual({ value: [1], expires: 9 });
    expect(keyvDeserialize('{"value":[1],"expires":null}')).toEqual({ value: [1] });
  });

  it('tells unreadable text (CORRUPT) from absent, and expired from live', () => {
    expect(decodeRecord('not json')).toBe(CORRUPT);
    expect(decodeRecord('[1,2]')).toBe(CORRUPT);
    expect(keyvDeserialize('not json')).toEqual({ value: CORRUPT });
    expect(liveValue(null, 10)).toBeUndefined();
    expect(liveValue('{"value":1,"expires":10}', 10)).toBe(1); // at its expiry: still live (as Keyv)
    expect(liveValue('{"value":1,"expires":10}', 11)).toBeUndefined();
    expect(liveValue('{"value":1}', Number.MAX_SAFE_INTEGER)).toBe(1);
    expect(liveValue('{oops', 0)).toBe(CORRUPT);
  });
});

for (const url of [undefined, REDIS_URL])
  describe(`kv primitives: ${url === undefined ? 'sqlite' : 'redis'}`, url ? needs('redis') : {}, () => {
    let dataDir: string;
    let a: Stores;
    let b: Stores;
    let raw: Backend;
    const opened: Stores[] = [];

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'kv-primitives-'));
      const namespace = `${RUN_ID}_${url === undefined ? 'sql' : 'red'}_${(nsCounter += 1)}`;
      const open = async () => {
        const s = await createStores({
          operations: jobOperations,
          redisUrl: url,
          dataDir,
          namespace,
          logger,
          opTimeoutMs: 2_000,
        });
        opened.push(s);
        return s;
      };
      a = await open();
      b = url === undefined ? a : await open();
      raw = await openBackend({ redisUrl: url, dataDir, namespace, opTimeoutMs: 2_000, logger });
    });

    afterAll(async () => {
      await raw.clearNamespace();
      await raw.close();
      for (const s of opened) await s.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('claim: of 20 callers at once on two instances, exactly one wins; the others are told the holder at once', async () => {
      const tries = Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? a : b).kv.claim('c:race', { by: i }, 60_000),
      );
      const got = await Promise.all(tries);
      const winners = got.flatMap((g, i) => (g.won ? [i] : []));
      expect(winners).toHaveLength(1);
      const holder = { by: winners[0] };
      for (const g of got) if (!g.won) expect(g.holder).toEqual(holder);
      expect(await a.kv.get('c:race')).toEqual(holder);
      // Busy is answered, not waited out: a lost claim costs one round trip.
      const started = performance.now();
      expect(await b.kv.claim('c:race', { by: 'late' }, 60_000)).toEqual({ won: false, holder });
      expect(performance.now() - started).toBeLessThan(1_000);
    });

    it('claim: an expired claim is free again (Redis drops it; SQLite replaces the expired row in its one statement)', async () => {
      expect((await a.kv.claim('c:lapse', { n: 1 }, 80)).won).toBe(true);
      const until = Date.now() + 80;
      // Not read meanwhile: SQLite keeps the expired row until the claim replaces it.
      await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(until + 5), { timeout: 2_000, interval: 10 });
      expect(await b.kv.claim('c:lapse', { n: 2 }, 60_000)).toEqual({ won: true });
      expect(await a.kv.get('c:lapse')).toEqual({ n: 2 });
    });

    it('claim: text that is not JSON does not hold the key', async () => {
      await raw.writeRaw('kv:c:bad', 'not json at all');
      expect(await a.kv.claim('c:bad', { ok: 1 }, 60_000)).toEqual({ won: true });
      expect(await a.kv.get('c:bad')).toEqual({ ok: 1 });
    });

    it('a record in the format the previous version wrote reads, holds a claim, and is compare-and-set over', async () => {
      // Byte for byte what the previous version stored (Keyv's {value, expires} as plain JSON).
      const expires = Date.now() + 3_600_000;
      await raw.writeRaw('kv:old:claim', `{"value":{"at":1700000000000},"expires":${expires}}`);
      await raw.writeRaw('kv:old:count', `{"value":{"n":41},"expires":${expires}}`);
      await raw.writeRaw('kv:old:forever', '{"value":["a","b"]}');
      expect(await a.kv.get('old:claim')).toEqual({ at: 1_700_000_000_000 });
      expect(await a.kv.get('old:forever')).toEqual(['a', 'b']);
      expect(await b.kv.claim('old:claim', { at: 2 }, 60_000)).toEqual({
        won: false,
        holder: { at: 1_700_000_000_000 },
      });
      const n = await a.kv.update(['old:count'], ([v]) => {
        const next = (v as { n: number }).n + 1;
        return { result: next, writes: [{ key: 'old:count', value: { n: next }, ttlMs: 60_000 }] };
      });
      expect(n).toBe(42);
      expect(await b.kv.get('old:count')).toEqual({ n: 42 });
    });

    it('update: 20 increments at once from two instances all land (compare-and-set, no lock)', async () => {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? a : b).kv.update(['u:count'], ([v]) => {
            const n = typeof v === 'number' ? v + 1 : 1;
            return { result: n, writes: [{ key: 'u:count', value: n, ttlMs: 60_000 }] };
          }),
        ),
      );
      expect(await a.kv.get('u:count')).toBe(20);
    });

    it('update: a delete is part of the same atomic write; a change made meanwhile makes it decide again', async () => {
      await a.kv.set('u:x', 'first', 60_000);
      await a.kv.set('u:y', 'kept', 60_000);
      let decisions = 0;
      const seen = await a.kv.update(['u:x', 'u:y'], async ([x]) => {
        decisions += 1;
        // Another instance changes u:x between this read and its write, once.
        if (decisions === 1) await b.kv.set('u:x', 'second', 60_000);
        return { result: x, writes: [{ key: 'u:x', delete: true }] };
      });
      // SQLite (one process): a direct set is not compared, the first decision stands;
      // Redis: the compare-and-set saw the change and decided again on it.
      expect(seen).toBe(url === undefined ? 'first' : 'second');
      expect(decisions).toBe(url === undefined ? 1 : 2);
      expect(await b.kv.get('u:x')).toBeUndefined();
      expect(await b.kv.get('u:y')).toBe('kept');
      // A deleted key is free for a claim.
      expect(await b.kv.claim('u:x', 'mine', 60_000)).toEqual({ won: true });
    });

    it('claim and update on one key: a claim made while an update decides is never overwritten unseen', async () => {
      let decisions = 0;
      let claiming: Promise<KvClaim> | undefined;
      const wrote = await a.kv.update(['cu:k'], async ([v]) => {
        decisions += 1;
        if (decisions === 1) {
          claiming = b.kv.claim('cu:k', 'claimed', 60_000);
          // Redis: the claim lands between this read and this write. SQLite: it waits for the
          // key's in-process turn (awaiting it here would wait for ourselves).
          if (url !== undefined) await claiming;
        }
        return v === undefined
          ? { result: 'took it', writes: [{ key: 'cu:k', value: 'updated', ttlMs: 60_000 }] }
          : { result: `left ${String(v)}` };
      });
      const claimed = await claiming;
      if (url === undefined) {
        expect(wrote).toBe('took it');
        expect(claimed).toEqual({ won: false, holder: 'updated' });
      } else {
        expect(claimed).toEqual({ won: true });
        expect(wrote).toBe('left claimed');
        expect(await a.kv.get('cu:k')).toBe('claimed');
      }
    });

    it('interaction claim: a delivery seen by two instances at once runs once', async () => {
      const onA = createInteractionClaim(a.kv, Date.now);
      const onB = createInteractionClaim(b.kv, Date.now);
      const runs = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? onA : onB)('i-1')));
      expect(runs.filter(Boolean)).toHaveLength(1);
      expect(await onA('i-2')).toBe(true);
    });

    it('retry guard: two presses of Retry at once on two instances start one retry; a press after it started is shown it', async () => {
      const job = { id: 'retry-new', state: 'queued' } as JobRecord;
      const guard = (s: Stores) =>
        new RetryGuard({
          kv: s.kv,
          records: { get: async (id) => (id === job.id ? job : undefined) },
          runningTtlMs: 60_000,
          now: Date.now,
        });
      const presses = await Promise.all([guard(a).claim('j-1'), guard(b).claim('j-1')]);
      const ok = presses.filter((p) => p.ok);
      expect(ok).toHaveLength(1);
      const [won] = ok;
      if (won?.ok) await won.started(job);
      expect(await guard(b).claim('j-1')).toEqual({ ok: false, running: job });
    });
  });
