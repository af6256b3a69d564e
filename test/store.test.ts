import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { privateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { REDIS_URL } from './helpers/detect.js';
import { needs } from './helpers/requirements.js';
import { holdNewSqliteFile } from './helpers/held-sqlite.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino, type Logger } from 'pino';
import { createClient } from '@redis/client';
import { deleteRedisKeys } from './helpers/redis-namespace.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openBackend, type Backend } from '../src/services/store/backend.js';
import { DataDirInUseError, lockDataDir } from '../src/services/store/data-dir-lock.js';
import { StoreUnavailableError } from '../src/services/store/errors.js';
import { createStores, mergeJob, type StoreOptions, type Stores } from '../src/services/store/index.js';
import type { TaskOutputs } from '../src/services/media/types.js';
import { jobOperations } from '../src/services/operations/index.js';
import type { JobRecord, JobUpdate } from '../src/services/store/types.js';

// Backends: SQLite always; the Redis at REDIS_URL (skipped, saying so, when none answers).
const redisUrl = REDIS_URL;

const RUN_ID = `t${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
let nsCounter = 0;
async function eventuallyTrue(check: () => boolean, ms = 5000): Promise<void> {
  for (const until = Date.now() + ms; !check();) {
    if (Date.now() > until) throw new Error('timed out');
    await sleep(20);
  }
}

const uniqueNamespace = (label: string): string => `${RUN_ID}_${label}_${(nsCounter += 1)}`;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/** Every secret handed to a store; none may ever appear in a log line. */
const secretsSeen = new Set<string>();

function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

function makeJob(id: string, overrides: Partial<JobRecord> = {}): JobRecord {
  const secret = randomBytes(16).toString('hex');
  const token = `tok_${randomBytes(12).toString('hex')}`;
  secretsSeen.add(secret);
  secretsSeen.add(token);
  return {
    id,
    secret,
    operation: 'song',
    userId: 'user-default',
    message: {
      channelId: 'chan-1',
      guildId: 'guild-1',
      interaction: { applicationId: 'app-1', token, createdAt: 1_000 },
    },
    params: { prompt: 'a song about stores', continueAt: 30, instrumental: false, tags: ['x', 'y'] },
    state: 'submitting',
    percentage: 0,
    createdAt: 1_000,
    updatedAt: 1_000,
    version: 0,
    ...overrides,
  };
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** ~50 updates of one job's life (queued, taskId, progress with duplicates, finished with result). */
function lifecycleUpdates(random: () => number, taskId: string): JobUpdate[] {
  const updates: JobUpdate[] = [
    { state: 'queued', at: 2_001 },
    { state: 'queued', taskId, at: 2_002 },
  ];
  while (updates.length < 46) {
    const pct = Math.floor(random() * 101);
    const update: JobUpdate = { state: 'processing', percentage: pct, at: 2_100 + pct * 10 };
    if (random() < 0.3) update.statusText = `working ${pct}%`;
    updates.push(update);
    if (random() < 0.4) updates.push({ ...update });
  }
  const finished: JobUpdate = {
    state: 'finished',
    taskId,
    statusText: 'done',
    result: { kind: 'video', videoUrl: `https://cdn.example/${taskId}.mp4` },
    at: 9_000,
  };
  updates.push(finished, { ...finished });
  return updates;
}

function withoutVersion(job: JobRecord): Omit<JobRecord, 'version'> {
  const { version: _version, ...rest } = job;
  return rest;
}

async function expectUnavailableWithin(
  label: string,
  fn: () => Promise<unknown>,
  maxMs: number,
): Promise<number> {
  const started = performance.now();
  let error: unknown;
  try {
    await fn();
  } catch (e) {
    error = e;
  }
  const elapsed = performance.now() - started;
  expect(error, `${label} should reject`).toBeInstanceOf(StoreUnavailableError);
  expect((error as StoreUnavailableError).code).toBe('STORE_UNAVAILABLE');
  expect(elapsed, `${label} took ${elapsed.toFixed(0)}ms`).toBeLessThan(maxMs);
  return elapsed;
}

// ---------------------------------------------------------------------------
// Conformance suite, run against every available backend
// ---------------------------------------------------------------------------

for (const url of [undefined, redisUrl])
  describe(
    `JobStore conformance: ${url === undefined ? 'sqlite' : 'redis'}`,
    url ? needs('redis') : {},
    () => {
      const { logger, lines } = captureLogger();
      let dataDir: string;
      let stores: Stores;
      let raw: Backend;
      const opened: { stores: Stores; raw: Backend }[] = [];

      /** A store (and a raw handle on the same namespace) with its own namespace. */
      async function open(extra: Partial<StoreOptions> = {}): Promise<{ stores: Stores; raw: Backend }> {
        const namespace = uniqueNamespace(url === undefined ? 'sql' : 'red');
        const s = await createStores({
          operations: jobOperations,
          redisUrl: url,
          dataDir,
          namespace,
          logger,
          ...extra,
        });
        const r = await openBackend({ redisUrl: url, dataDir, namespace, opTimeoutMs: 2_000, logger });
        const pair = { stores: s, raw: r };
        opened.push(pair);
        return pair;
      }

      beforeAll(async () => {
        dataDir = await mkdtemp(join(tmpdir(), 'store-test-'));
        ({ stores, raw } = await open({ userListLimit: 5 }));
        expect(stores.backend).toBe(url === undefined ? 'sqlite' : 'redis');
      });

      afterAll(async () => {
        // On Redis one SCAN for every store of this block (a SCAN per store walked the whole keyspace each time).
        if (url !== undefined) await deleteRedisKeys(url, [`${RUN_ID}_red_*`]);
        for (const pair of opened) {
          if (url === undefined) await pair.raw.clearNamespace();
          await pair.stores.close();
          await pair.raw.close();
        }
        await rm(dataDir, { recursive: true, force: true });
        const all = lines.join('');
        for (const secret of secretsSeen)
          expect(all.includes(secret), 'a secret reached the logs').toBe(false);
      });

      it('create / get round-trips the record exactly; unknown ids are undefined', async () => {
        const job = makeJob('rt-1', { taskId: 'rt-task-1', statusText: 'hi', lastEventAt: 1_500 });
        await stores.jobs.create(job);
        expect(await stores.jobs.get('rt-1')).toStrictEqual(job);
        expect(await stores.jobs.get('nope')).toBeUndefined();
        await stores.jobs.ping();
      });

      it('a re-delivery that only moves lastEventAt is not written by itself; the next change carries it', async () => {
        await stores.jobs.create(makeJob('le-1', { state: 'queued', taskId: 'task-le-1' }));
        await stores.jobs.apply('le-1', { state: 'processing', percentage: 20, at: 2_000 });
        const stored = await raw.get('job:le-1');
        const dup = await stores.jobs.apply('le-1', { state: 'processing', percentage: 20, at: 2_500 });
        // The stored record comes back as it is (no copy per re-delivery); the time waits beside it.
        expect(dup).toMatchObject({ changed: false, job: { version: 1 } });
        expect(stores.jobs.unwrittenEventAt?.('le-1')).toBe(2_500);
        expect(await raw.get('job:le-1')).toStrictEqual(stored);
        const next = await stores.jobs.apply('le-1', { state: 'processing', percentage: 30, at: 2_400 });
        expect(next).toMatchObject({ changed: true, job: { lastEventAt: 2_500, percentage: 30 } });
        expect(await stores.jobs.get('le-1')).toMatchObject({
          lastEventAt: 2_500,
          percentage: 30,
          version: 2,
        });
      });

      // Another instance's keeper reads only the store: a stream of re-deliveries to this
      // instance must reach it now and then, or it polls a job whose webhooks still come.
      it('a re-delivery eventWriteMs after the stored time is written (only its time), so every instance sees it', async () => {
        const { stores: s, raw: r } = await open({ eventWriteMs: 1_000 });
        await s.jobs.create(makeJob('le-3', { state: 'queued', taskId: 'task-le-3' }));
        await s.jobs.apply('le-3', { state: 'processing', percentage: 20, at: 2_000 });
        const stored = await r.get('job:le-3');
        await s.jobs.apply('le-3', { state: 'processing', percentage: 20, at: 2_900 });
        expect(await r.get('job:le-3')).toStrictEqual(stored);
        const late = await s.jobs.apply('le-3', { state: 'processing', percentage: 20, at: 3_100 });
        expect(late).toMatchObject({ changed: false, job: { lastEventAt: 3_100, version: 1 } });
        // What another instance reads from the store: the time, and nothing else moved.
        expect(await r.get('job:le-3')).toMatchObject({
          lastEventAt: 3_100,
          percentage: 20,
          version: 1,
        });
      });

      it('re-deliveries of a job this process has not written yet still carry their time to the next change', async () => {
        // Regression: the memo only kept a re-delivery's time for records it already held,
        // so a job read from the store (created, recovered, or written by another instance)
        // lost it and was read again on every duplicate.
        await stores.jobs.create(
          makeJob('le-2', { state: 'processing', percentage: 20, taskId: 'task-le-2' }),
        );
        const stored = await raw.get('job:le-2');
        await stores.jobs.apply('le-2', { state: 'processing', percentage: 20, at: 2_500 });
        await stores.jobs.apply('le-2', { state: 'processing', percentage: 20, at: 2_600 });
        expect(await raw.get('job:le-2')).toStrictEqual(stored);
        const next = await stores.jobs.apply('le-2', { state: 'processing', percentage: 30, at: 2_400 });
        expect(next).toMatchObject({ changed: true, job: { lastEventAt: 2_600, percentage: 30 } });
        expect(await stores.jobs.get('le-2')).toMatchObject({ lastEventAt: 2_600, percentage: 30 });
      });

      it('applyInMemory: a re-delivery of a remembered job is decided without the store; anything else is left to apply', async () => {
        const jobs = stores.jobs;
        const inMemory = jobs.applyInMemory?.bind(jobs);
        if (!inMemory) throw new Error('the Keyv store decides re-deliveries in memory');
        await jobs.create(makeJob('im-1', { state: 'processing', percentage: 20, taskId: 'task-im-1' }));
        // Not remembered yet (created, never applied here): apply must read it.
        expect(inMemory('im-1', { state: 'processing', percentage: 20, at: 2_000 })).toBeUndefined();
        expect(inMemory('im-missing', { state: 'processing', at: 2_000 })).toBeUndefined();
        await jobs.apply('im-1', { state: 'processing', percentage: 20, at: 2_000 });
        const stored = await raw.get('job:im-1');

        // A duplicate: decided here, nothing written, its time kept for the next write.
        const dup = inMemory('im-1', { state: 'processing', percentage: 20, taskId: 'task-im-1', at: 2_700 });
        expect(dup).toMatchObject({ changed: false, job: { id: 'im-1', percentage: 20 } });
        // Lower than what is stored: no change either.
        expect(inMemory('im-1', { state: 'queued', percentage: 5, at: 2_100 })?.changed).toBe(false);
        expect(await raw.get('job:im-1')).toStrictEqual(stored);

        // A change, a new status text, or a conflicting task id: apply's work, nothing merged here.
        expect(inMemory('im-1', { state: 'processing', percentage: 30, at: 2_800 })).toBeUndefined();
        expect(inMemory('im-1', { state: 'processing', statusText: 'rendering', at: 2_800 })).toBeUndefined();
        expect(inMemory('im-1', { state: 'processing', taskId: 'task-other', at: 2_800 })).toBeUndefined();
        expect(inMemory('im-1', { state: 'finished', at: 2_800 })).toBeUndefined();
        expect(await raw.get('job:im-1')).toStrictEqual(stored);

        // The next write carries the duplicate's time.
        const next = await jobs.apply('im-1', { state: 'processing', percentage: 30, at: 2_500 });
        expect(next).toMatchObject({ changed: true, job: { percentage: 30, lastEventAt: 2_700 } });
        expect(await jobs.get('im-1')).toMatchObject({ percentage: 30, lastEventAt: 2_700 });
      });

      it('applyInMemory waits its turn: while an apply of the job runs, it defers to apply', async () => {
        const jobs = stores.jobs;
        await jobs.create(makeJob('im-2', { state: 'processing', percentage: 20, taskId: 'task-im-2' }));
        await jobs.apply('im-2', { state: 'processing', percentage: 20, at: 2_000 });
        expect(
          jobs.applyInMemory?.('im-2', { state: 'processing', percentage: 20, at: 2_001 })?.changed,
        ).toBe(false);
        // An apply between its read and its write: the in-memory path must not merge beside it.
        const running = jobs.apply('im-2', { state: 'processing', percentage: 60, at: 2_100 });
        expect(
          jobs.applyInMemory?.('im-2', { state: 'processing', percentage: 20, at: 2_002 }),
        ).toBeUndefined();
        await running;
        expect(
          jobs.applyInMemory?.('im-2', { state: 'processing', percentage: 60, at: 2_003 }),
        ).toMatchObject({
          changed: false,
          job: { percentage: 60 },
        });
      });

      // Regression (memory): every poll of thousands of jobs left a memo entry that lived 15 s,
      // long enough to reach V8's old generation, and no re-delivery ever used it.
      it('apply with remember: false (a poll) adds nothing to the memo, but keeps a remembered record current', async () => {
        const jobs = stores.jobs;
        const inMemory = jobs.applyInMemory?.bind(jobs);
        if (!inMemory) throw new Error('the Keyv store decides re-deliveries in memory');
        await jobs.create(makeJob('rm-1', { state: 'processing', percentage: 20, taskId: 'task-rm-1' }));
        // Read, nothing changed, not remembered: the next duplicate is apply's again.
        expect(
          await jobs.apply('rm-1', { state: 'processing', percentage: 20, at: 2_000 }, { remember: false }),
        ).toMatchObject({ changed: false });
        expect(inMemory('rm-1', { state: 'processing', percentage: 20, at: 2_001 })).toBeUndefined();
        // Written, not remembered either.
        expect(
          (await jobs.apply('rm-1', { state: 'processing', percentage: 30, at: 2_100 }, { remember: false }))
            ?.changed,
        ).toBe(true);
        expect(inMemory('rm-1', { state: 'processing', percentage: 30, at: 2_101 })).toBeUndefined();
        // Remembered by a webhook's apply: a poll's write updates that entry (no stale memo).
        await jobs.apply('rm-1', { state: 'processing', percentage: 30, at: 2_200 });
        expect(inMemory('rm-1', { state: 'processing', percentage: 30, at: 2_201 })?.changed).toBe(false);
        await jobs.apply('rm-1', { state: 'processing', percentage: 50, at: 2_300 }, { remember: false });
        expect(inMemory('rm-1', { state: 'processing', percentage: 50, at: 2_301 })).toMatchObject({
          changed: false,
          job: { percentage: 50 },
        });
        expect(await jobs.get('rm-1')).toMatchObject({ percentage: 50 });
      });

      it('getByTaskId: indexed by create with a taskId and by a later apply', async () => {
        await stores.jobs.create(makeJob('tk-1', { taskId: 'task-tk-1', state: 'queued' }));
        expect((await stores.jobs.getByTaskId('task-tk-1'))?.id).toBe('tk-1');

        await stores.jobs.create(makeJob('tk-2'));
        expect(await stores.jobs.getByTaskId('task-tk-2')).toBeUndefined();
        const r = await stores.jobs.apply('tk-2', { state: 'queued', taskId: 'task-tk-2', at: 2_000 });
        expect(r?.changed).toBe(true);
        expect((await stores.jobs.getByTaskId('task-tk-2'))?.id).toBe('tk-2');

        // A conflicting later taskId is ignored and not indexed.
        const conflict = await stores.jobs.apply('tk-2', { taskId: 'task-other', at: 2_001 });
        expect(conflict?.job.taskId).toBe('task-tk-2');
        expect(await stores.jobs.getByTaskId('task-other')).toBeUndefined();
        expect(await stores.jobs.getByTaskId('unknown-task')).toBeUndefined();
      });

      it('apply: unknown job -> undefined; duplicates and backwards moves -> changed false', async () => {
        expect(await stores.jobs.apply('missing-job', { state: 'queued', at: 1 })).toBeUndefined();
        await stores.jobs.create(makeJob('ap-1'));
        const first = await stores.jobs.apply('ap-1', { state: 'processing', percentage: 50, at: 2_000 });
        expect(first).toMatchObject({
          changed: true,
          job: { state: 'processing', percentage: 50, version: 1 },
        });
        const dup = await stores.jobs.apply('ap-1', { state: 'processing', percentage: 50, at: 2_000 });
        expect(dup?.changed).toBe(false);
        const back = await stores.jobs.apply('ap-1', { state: 'queued', percentage: 10, at: 2_100 });
        expect(back?.changed).toBe(false);
        expect(await stores.jobs.get('ap-1')).toMatchObject({
          state: 'processing',
          percentage: 50,
          version: 1,
        });
        const fin = await stores.jobs.apply('ap-1', {
          state: 'failed',
          error: { code: 'timed_out', message: 'gave up' },
          at: 3_000,
        });
        expect(fin?.job).toMatchObject({ state: 'failed', finishedAt: 3_000, version: 2 });
        const late = await stores.jobs.apply('ap-1', { state: 'finished', at: 4_000 });
        expect(late?.changed).toBe(false);
        expect((await stores.jobs.get('ap-1'))?.state).toBe('failed');
      });

      it('per-user list: most-recent-first, `limit` at a time (default userListLimit), every job kept', async () => {
        for (let i = 1; i <= 8; i += 1)
          await stores.jobs.create(makeJob(`ul-${i}`, { userId: 'user-list', createdAt: 1_000 + i }));
        await stores.jobs.create(makeJob('ul-other', { userId: 'user-other' }));
        const ids = (await stores.jobs.listByUser('user-list')).map((j) => j.id);
        expect(ids).toEqual(['ul-8', 'ul-7', 'ul-6', 'ul-5', 'ul-4']);
        expect((await stores.jobs.listByUser('user-list', 2)).map((j) => j.id)).toEqual(['ul-8', 'ul-7']);
        // The index holds every job (retention and /privacy delete prune it), not only the last few.
        expect(await stores.jobs.listByUser('user-list', 100)).toHaveLength(8);
        expect((await stores.jobs.listByUser('user-other')).map((j) => j.id)).toEqual(['ul-other']);
        expect(await stores.jobs.listByUser('nobody')).toEqual([]);
      });

      // A regression (issue 35's work): sent in the same round trip as its indexes, a new record
      // went through Keyv's asynchronous write and reached Redis after them; another instance's
      // listOpen in between pruned the job as one without a record, for good (no keeper after a
      // restart). What Redis receives must name the record before any index of it.
      // Redis only: SQLite is one process, whose writes are awaited in turn.
      if (url !== undefined)
        it('create writes the record before any index names it', async () => {
          const monitor = createClient({ url });
          const seen: string[] = [];
          await monitor.connect();
          try {
            await monitor.monitor((line: string) => seen.push(line));
            const ids = Array.from({ length: 20 }, (_, i) => `order-${i}`);
            await Promise.all(
              ids.map((id) => stores.jobs.create(makeJob(id, { state: 'queued', taskId: `t-${id}` }))),
            );
            await eventuallyTrue(() =>
              ids.every((id) => seen.some((l) => l.includes('"SADD"') && l.includes(id))),
            );
            for (const id of ids) {
              const record = seen.findIndex((l) => l.includes('"SET"') && l.includes(`job:${id}"`));
              const indexes = seen
                .map((l, i) => ({ l, i }))
                .filter(({ l }) => l.includes(`"${id}"`) && !l.includes(`job:${id}"`));
              expect(record, id).toBeGreaterThanOrEqual(0);
              expect(indexes.length, id).toBeGreaterThan(0);
              for (const { l, i } of indexes) expect(i, `${id}: ${l}`).toBeGreaterThan(record);
            }
          } finally {
            monitor.destroy();
          }
        });

      it('listOpen: added on create, kept while final work is left, removed once closed', async () => {
        await stores.jobs.create(makeJob('un-1'));
        await stores.jobs.create(makeJob('un-2', { state: 'queued', taskId: 'task-un-2' }));
        await stores.jobs.create(
          makeJob('un-3', {
            state: 'finished',
            percentage: 100,
            finishedAt: 1_000,
            result: { kind: 'upload' },
            settledAt: 1_000,
            finalShownAt: 1_000,
          }),
        );
        let ids = (await stores.jobs.listOpen()).map((j) => j.id);
        expect(ids).toEqual(expect.arrayContaining(['un-1', 'un-2']));
        expect(ids).not.toContain('un-3');

        await stores.jobs.apply('un-2', {
          state: 'finished',
          result: { kind: 'video', videoUrl: 'https://v' },
          at: 5_000,
        });
        // Final, but its final edit and after-final work are still to do: still open.
        expect((await stores.jobs.listOpen()).map((j) => j.id)).toContain('un-2');
        expect((await stores.jobs.getByTaskId('task-un-2'))?.state).toBe('finished');
        // Bookkeeping on a final job: stored (no version bump), and once both are done it leaves.
        const shown = await stores.jobs.apply('un-2', { finalShown: true, at: 6_000 });
        expect(shown?.changed).toBe(false);
        expect(shown?.job.finalShownAt).toBe(6_000);
        expect((await stores.jobs.listOpen()).map((j) => j.id)).toContain('un-2');
        await stores.jobs.apply('un-2', { settled: true, at: 7_000 });
        ids = (await stores.jobs.listOpen()).map((j) => j.id);
        expect(ids).toContain('un-1');
        expect(ids).not.toContain('un-2');
        const closed = await stores.jobs.get('un-2');
        expect(closed).toMatchObject({ state: 'finished', finalShownAt: 6_000, settledAt: 7_000 });
      });

      // Regression (memory): restart recovery read every unfinished record at once; held together,
      // 10 000 of them outlived young-generation GCs and were left as old-generation garbage.
      it('openPages: at most 100 records a page, every open job once; closed ones leave the index', async () => {
        const { stores: s, raw: r } = await open({});
        const ids = Array.from({ length: 230 }, (_, i) => `pg-${i}`);
        for (const id of ids) await s.jobs.create(makeJob(id, { taskId: `task-${id}` }));
        // Final or gone behind the index's back (a crash between the two writes, an expired
        // record): met on the way, not handed out, and dropped from the index.
        const stale = await s.jobs.get('pg-7');
        await r.set(
          'job:pg-7',
          {
            ...stale,
            state: 'failed',
            error: { code: 'timed_out', message: 'x' },
            settledAt: 5,
            finalShownAt: 5,
          },
          60_000,
        );
        await r.delete('job:pg-150');
        const sizes: number[] = [];
        const seen: string[] = [];
        for await (const page of s.jobs.openPages()) {
          sizes.push(page.length);
          seen.push(...page.map((j) => j.id));
        }
        expect(Math.max(...sizes)).toBeLessThanOrEqual(100);
        expect(sizes.length).toBeGreaterThanOrEqual(3);
        const live = ids.filter((id) => id !== 'pg-7' && id !== 'pg-150');
        expect(seen.slice().sort()).toEqual(live.slice().sort());
        // Pruned: the index (a Redis set, a sorted index on SQLite) names only the live ones now.
        const index = r.sets
          ? await r.sets.members('unfinished-set')
          : await r.sorted.range('open', { limit: 1_000 });
        expect(index.slice().sort()).toEqual(live.slice().sort());
      });

      it('userPages: every job of the member, newest first, 100 a page; other members untouched', async () => {
        const { stores: s } = await open({});
        for (let i = 0; i < 230; i += 1)
          await s.jobs.create(makeJob(`up-${i}`, { userId: 'user-pages', createdAt: 10_000 + i }));
        await s.jobs.create(makeJob('up-other', { userId: 'user-else' }));
        const sizes: number[] = [];
        const seen: string[] = [];
        for await (const page of s.jobs.userPages('user-pages')) {
          sizes.push(page.length);
          seen.push(...page.map((j) => j.id));
        }
        expect(sizes).toEqual([100, 100, 30]);
        expect(seen[0]).toBe('up-229');
        expect(seen.at(-1)).toBe('up-0');
        expect(new Set(seen).size).toBe(230);
        expect(seen).not.toContain('up-other');
      });

      it('delete: the record, its task id and every index entry go; an unknown id is a no-op', async () => {
        const { stores: s, raw: r } = await open({});
        await s.jobs.create(makeJob('del-1', { userId: 'user-del', taskId: 'task-del-1' }));
        await s.jobs.create(makeJob('del-2', { userId: 'user-del', taskId: 'task-del-2' }));
        await s.jobs.apply('del-2', {
          state: 'failed',
          error: { code: 'timed_out', message: 'x' },
          at: 2_000,
        });
        expect((await s.jobs.delete('del-1'))?.id).toBe('del-1');
        expect((await s.jobs.delete('del-2'))?.state).toBe('failed');
        expect(await s.jobs.delete('del-1')).toBeUndefined();
        expect(await s.jobs.get('del-1')).toBeUndefined();
        expect(await s.jobs.getByTaskId('task-del-1')).toBeUndefined();
        expect(await s.jobs.getByTaskId('task-del-2')).toBeUndefined();
        expect(await s.jobs.listByUser('user-del')).toEqual([]);
        expect(await s.jobs.listOpen()).toEqual([]);
        expect(await r.sorted.count('user-jobs:user-del')).toBe(0);
        expect(await r.sorted.count('ended')).toBe(0);
      });

      it('sweepEnded: deletes jobs that ended before the cut-off, a page at a time; open and recent ones stay', async () => {
        const { stores: s } = await open({});
        for (let i = 0; i < 12; i += 1) {
          await s.jobs.create(makeJob(`sw-${i}`, { userId: 'user-sweep', taskId: `task-sw-${i}` }));
          await s.jobs.apply(`sw-${i}`, {
            state: 'finished',
            result: { kind: 'upload' },
            at: 1_000 + i * 100,
          });
        }
        await s.jobs.create(makeJob('sw-open', { userId: 'user-sweep' }));
        // Created already ended (an import, a test): indexed by its end too.
        await s.jobs.create(
          makeJob('sw-created-ended', {
            state: 'failed',
            finishedAt: 1_050,
            error: { code: 'x', message: 'y' },
          }),
        );
        expect(await s.jobs.sweepEnded(1_500, 2)).toBe(6); // sw-0..sw-4 (≤ 1 400) and sw-created-ended
        expect(await s.jobs.get('sw-4')).toBeUndefined();
        expect(await s.jobs.get('sw-created-ended')).toBeUndefined();
        expect((await s.jobs.get('sw-5'))?.state).toBe('finished');
        expect((await s.jobs.get('sw-open'))?.state).toBe('submitting');
        const left = (await s.jobs.listByUser('user-sweep', 100)).map((j) => j.id).sort();
        expect(left).toEqual(['sw-10', 'sw-11', 'sw-5', 'sw-6', 'sw-7', 'sw-8', 'sw-9', 'sw-open']);
        expect(await s.jobs.sweepEnded(1_500)).toBe(0);
      });

      it('a member index entry whose record expired is pruned when read; clearUserIndex forgets the rest', async () => {
        const { stores: s, raw: r } = await open({});
        await s.jobs.create(makeJob('gone-1', { userId: 'user-gone', createdAt: 5 }));
        await s.jobs.create(makeJob('kept-1', { userId: 'user-gone', createdAt: 6 }));
        await r.delete('job:gone-1');
        expect((await s.jobs.listByUser('user-gone')).map((j) => j.id)).toEqual(['kept-1']);
        expect(await r.sorted.range('user-jobs:user-gone', { limit: 10 })).toEqual(['kept-1']);
        // An older version's JSON list is still read, then forgotten with the index.
        await r.set('user:user-gone', ['old-1'], 60_000);
        await s.jobs.create(makeJob('old-1', { userId: 'user-gone', createdAt: 1 }));
        await r.sorted.remove('user-jobs:user-gone', ['old-1']);
        expect((await s.jobs.listByUser('user-gone')).map((j) => j.id)).toEqual(['kept-1', 'old-1']);
        await s.jobs.clearUserIndex('user-gone');
        expect(await r.sorted.count('user-jobs:user-gone')).toBe(0);
        expect(await r.get('user:user-gone')).toBeUndefined();
      });

      it('getByMessageId: the job message, its channel reply and its gallery post all lead to the job', async () => {
        const { stores: s } = await open({});
        await s.jobs.create(makeJob('mi-1', { taskId: 'task-mi-1' }));
        await s.jobs.apply('mi-1', { messageId: 'msg-reply', at: 2_000 });
        expect((await s.jobs.getByMessageId('msg-reply'))?.id).toBe('mi-1');
        await s.jobs.apply('mi-1', {
          thread: {
            message: { channelId: 'thread-1', guildId: 'guild-1', messageId: 'msg-live' },
            reply: { channelId: 'chan-1', guildId: 'guild-1', messageId: 'msg-reply' },
          },
          at: 2_100,
        });
        await s.jobs.apply('mi-1', { state: 'finished', result: { kind: 'upload' }, at: 3_000 });
        await s.jobs.apply('mi-1', { galleryPost: { channelId: 'gal', messageId: 'msg-post' }, at: 3_100 });
        for (const id of ['msg-reply', 'msg-live', 'msg-post'])
          expect((await s.jobs.getByMessageId(id))?.id).toBe('mi-1');
        expect(await s.jobs.getByMessageId('msg-other')).toBeUndefined();
        await s.jobs.delete('mi-1');
        for (const id of ['msg-reply', 'msg-live', 'msg-post'])
          expect(await s.jobs.getByMessageId(id)).toBeUndefined();
      });

      it('concurrent creates never lose a user-list or unfinished entry', async () => {
        const { stores: s } = await open({ userListLimit: 50 });
        const ids = Array.from({ length: 30 }, (_, i) => `cc-${i}`);
        await Promise.all(ids.map((id) => s.jobs.create(makeJob(id, { userId: 'user-cc' }))));
        const listed = (await s.jobs.listByUser('user-cc')).map((j) => j.id);
        expect(listed.slice().sort()).toEqual(ids.slice().sort());
        const unfinished = (await s.jobs.listOpen()).map((j) => j.id);
        expect(unfinished.slice().sort()).toEqual(ids.slice().sort());
      });

      it('TTL: unfinished jobs expire after unfinishedTtlMs, final ones are kept jobTtlMs', async () => {
        const { stores: s } = await open({ unfinishedTtlMs: 300, jobTtlMs: 1_200 });
        await s.jobs.create(makeJob('ttl-open', { taskId: 'task-ttl-open' }));
        await s.jobs.create(makeJob('ttl-done', { taskId: 'task-ttl-done' }));
        await s.jobs.apply('ttl-done', { state: 'finished', result: { kind: 'upload' }, at: 2_000 });
        await s.jobs.apply('ttl-done', { settled: true, finalShown: true, at: 2_001 });
        expect((await s.jobs.listOpen()).map((j) => j.id)).toEqual(['ttl-open']);

        await sleep(600);
        expect(await s.jobs.get('ttl-open')).toBeUndefined();
        expect(await s.jobs.getByTaskId('task-ttl-open')).toBeUndefined();
        expect(await s.jobs.listOpen()).toEqual([]);
        expect((await s.jobs.get('ttl-done'))?.state).toBe('finished');
        expect((await s.jobs.getByTaskId('task-ttl-done'))?.id).toBe('ttl-done');

        await sleep(900);
        expect(await s.jobs.get('ttl-done')).toBeUndefined();
        expect(await s.jobs.getByTaskId('task-ttl-done')).toBeUndefined();
        expect(await s.jobs.listByUser('user-default')).toEqual([]);
      });

      it('kv: get / set / delete, with TTL', async () => {
        const value = { photos: ['a', 'b'], count: 2, nested: { ok: true } };
        await stores.kv.set('session:1', value, 10_000);
        expect(await stores.kv.get<typeof value>('session:1')).toEqual(value);
        await stores.kv.set('session:1', 'replaced', 10_000);
        expect(await stores.kv.get<string>('session:1')).toBe('replaced');
        await stores.kv.delete('session:1');
        expect(await stores.kv.get('session:1')).toBeUndefined();
        await stores.kv.delete('never-set');

        await stores.kv.set('short', 42, 200);
        expect(await stores.kv.get<number>('short')).toBe(42);
        await sleep(450);
        expect(await stores.kv.get('short')).toBeUndefined();

        await expect(stores.kv.set('bad', 1, 0)).rejects.toThrow(RangeError);
        // kv keys do not collide with job keys
        await stores.kv.set('job:rt-1', 'not a job', 10_000);
        expect((await stores.jobs.get('rt-1'))?.id).toBe('rt-1');
      });

      it('kv update: reads several keys, writes them all at once; a write by another between read and write makes it decide again', async () => {
        await stores.kv.set('tx:a', { n: 1 }, 10_000);
        let calls = 0;
        const result = await stores.kv.update(['tx:a', 'tx:b'], ([a, b]) => {
          calls++;
          expect(b).toBeUndefined();
          const n = (a as { n: number }).n;
          return {
            result: n,
            writes: [
              { key: 'tx:a', value: { n: n + 1 }, ttlMs: 10_000 },
              { key: 'tx:b', value: 'written', ttlMs: 200 },
            ],
          };
        });
        expect([result, calls]).toEqual([1, 1]);
        // Plain reads see both, each with its own TTL.
        expect(await stores.kv.get('tx:a')).toEqual({ n: 2 });
        expect(await stores.kv.get('tx:b')).toBe('written');
        await sleep(450);
        expect(await stores.kv.get('tx:b')).toBeUndefined();
        // Nothing to write: nothing changes.
        expect(await stores.kv.update(['tx:a'], ([a]) => ({ result: a }))).toEqual({ n: 2 });
        // A key not read cannot be written.
        await expect(
          stores.kv.update(['tx:a'], () => ({
            result: 0,
            writes: [{ key: 'tx:other', value: 1, ttlMs: 1_000 }],
          })),
        ).rejects.toThrow(/was not read/);

        // Another instance's write lands between this caller's read and its write: on Redis the
        // write is refused and the caller decides again from what is there. SQLite has no other
        // instance (one process per file): updates are atomic against each other (the keys'
        // mutexes), so keys kept by `update` are written through it only.
        const seen: unknown[] = [];
        const final = await stores.kv.update(['tx:a'], async ([a]) => {
          seen.push(a);
          if (seen.length === 1) await stores.kv.set('tx:a', { n: 10 }, 10_000);
          const n = (a as { n: number }).n;
          return { result: n, writes: [{ key: 'tx:a', value: { n: n + 1 }, ttlMs: 10_000 }] };
        });
        if (url === undefined) {
          expect(seen).toEqual([{ n: 2 }]);
          expect(await stores.kv.get('tx:a')).toEqual({ n: 3 });
        } else {
          expect(seen).toEqual([{ n: 2 }, { n: 10 }]);
          expect(final).toBe(10);
          expect(await stores.kv.get('tx:a')).toEqual({ n: 11 });
        }
      });

      it('a corrupt record is logged and treated as absent', async () => {
        await raw.writeRaw('job:bad-json', '{this is not json');
        await raw.set('job:bad-shape', { id: 'bad-shape', state: 'exploded', secret: 1 }, undefined);
        await raw.writeRaw('user:user-bad', '[1, 2');
        await raw.set('task:task-bad', { not: 'an id' }, undefined);
        await raw.writeRaw('kv:bad', 'garbage');

        expect(await stores.jobs.get('bad-json')).toBeUndefined();
        expect(await stores.jobs.get('bad-shape')).toBeUndefined();
        expect(await stores.jobs.apply('bad-shape', { state: 'queued', at: 1 })).toBeUndefined();
        expect(await stores.jobs.listByUser('user-bad')).toEqual([]);
        expect(await stores.jobs.getByTaskId('task-bad')).toBeUndefined();
        expect(await stores.kv.get('bad')).toBeUndefined();
        const warnings = lines.filter((l) => l.includes('corrupt record'));
        expect(warnings.some((l) => l.includes('job:bad-json'))).toBe(true);
        expect(warnings.some((l) => l.includes('job:bad-shape'))).toBe(true);

        // A corrupt id in the unfinished set is pruned, not thrown.
        await stores.jobs.create(makeJob('un-corrupt'));
        await raw.writeRaw('job:un-corrupt', 'nope');
        expect((await stores.jobs.listOpen()).map((j) => j.id)).not.toContain('un-corrupt');
      });

      it('checks a stored result with its operation’s schema, as the registry passes it in', async () => {
        const song: TaskOutputs = { kind: 'song', songs: [{ songId: 's-1', lyrics: 'la' }] };
        await raw.set('job:res-song', { ...makeJob('res-song'), state: 'finished', result: song }, undefined);
        expect((await stores.jobs.get('res-song'))?.result).toEqual(song);
        // A song without its id, a result of another shape, an operation no module declares.
        const bad = {
          'res-no-id': { kind: 'song', songs: [{ lyrics: 'la' }] },
          'res-shape': { kind: 'video', imageUrls: ['https://i'] },
          'res-kind': { kind: 'remix', imageUrls: ['https://i'] },
        };
        for (const [id, result] of Object.entries(bad)) {
          await raw.set(`job:${id}`, { ...makeJob(id), state: 'finished', result }, undefined);
          expect(await stores.jobs.get(id)).toBeUndefined();
        }
        await raw.set('job:res-op', { ...makeJob('res-op'), operation: 'remix' }, undefined);
        expect(await stores.jobs.get('res-op')).toBeUndefined();
        const warnings = lines.filter((l) => l.includes('corrupt record'));
        expect(warnings.find((l) => l.includes('job:res-no-id'))).toContain('result.songs.0.songId');
        expect(warnings.find((l) => l.includes('job:res-shape'))).toContain('result.videoUrl');
        expect(warnings.find((l) => l.includes('job:res-kind'))).toContain('result.kind');
        expect(warnings.find((l) => l.includes('job:res-op'))).toContain('operation');
        await expect(
          stores.jobs.create({ ...makeJob('res-write'), result: bad['res-no-id'] as unknown as TaskOutputs }),
        ).rejects.toThrow(/result\.songs\.0\.songId/);
      });

      it('rejects invalid records on write instead of storing something unreadable', async () => {
        await expect(stores.jobs.create(makeJob('inv-1', { percentage: 150 }))).rejects.toThrow(TypeError);
        expect(await stores.jobs.get('inv-1')).toBeUndefined();
      });

      it('converges: 50 shuffled updates with duplicates applied concurrently (x5)', async () => {
        const random = rng(7);
        for (let round = 0; round < 5; round += 1) {
          const id = `conv-${round}`;
          const taskId = `task-conv-${round}`;
          const job = makeJob(id);
          await stores.jobs.create(job);
          const updates = shuffle(lifecycleUpdates(random, taskId), random);
          expect(updates.length).toBeGreaterThanOrEqual(48);

          const results = await Promise.all(updates.map((u) => stores.jobs.apply(id, u)));
          const final = await stores.jobs.get(id);
          const expected = updates.reduce((acc, u) => mergeJob(acc, u).job, job);

          expect(final).toBeDefined();
          expect(withoutVersion(final as JobRecord)).toStrictEqual(withoutVersion(expected));
          expect(final).toMatchObject({ state: 'finished', percentage: 100, taskId, finishedAt: 9_000 });
          // No lost update: every apply that reported a change bumped the version exactly once.
          expect(results.every((r) => r !== undefined)).toBe(true);
          expect(final?.version).toBe(results.filter((r) => r?.changed).length);
          expect((await stores.jobs.getByTaskId(taskId))?.id).toBe(id);
          // Final, with its final edit and after-final work still to do: open until closed.
          expect((await stores.jobs.listOpen()).map((j) => j.id)).toContain(id);
        }
      });

      // Redis only: SQLite serves one process.
      if (url !== undefined)
        it('several instances on one Redis: updates spread over three store connections converge, none lost (x5)', async () => {
          // Three "instances" (own connection, own in-process lock and memo) on one namespace:
          // the webhooks of one job land on any of them, concurrently.
          const namespace = uniqueNamespace('multi');
          const instances = [
            (await open({ namespace })).stores,
            (await open({ namespace })).stores,
            (await open({ namespace })).stores,
          ];
          const first = instances[0] as Stores;
          const random = rng(11);
          for (let round = 0; round < 5; round += 1) {
            const id = `multi-${round}`;
            const taskId = `task-multi-${round}`;
            const job = makeJob(id);
            await first.jobs.create(job);
            const updates = shuffle(lifecycleUpdates(random, taskId), random);
            const results = await Promise.all(
              updates.map((u, i) => (instances[i % instances.length] as Stores).jobs.apply(id, u)),
            );
            const final = await first.jobs.get(id);
            const expected = updates.reduce((acc, u) => mergeJob(acc, u).job, job);
            expect(withoutVersion(final as JobRecord)).toStrictEqual(withoutVersion(expected));
            // Every apply that reported a change bumped the version exactly once: none was overwritten.
            expect(final?.version).toBe(results.filter((r) => r?.changed).length);
            // Exactly one instance saw the job become final (so one final edit, one gallery post).
            expect(
              results.filter((r) => r?.changed && r.job.state === 'finished').length,
              'one apply made the job final',
            ).toBe(1);
          }
        });

      // Redis only: the compare-and-set is a Lua script there (SQLite: the key's in-process turn).
      if (url !== undefined)
        it("apply's compare-and-set sends the SHA-1 of the text read, not the text; another writer's change is merged, not overwritten", async () => {
          const namespace = uniqueNamespace('sha');
          const { stores: a } = await open({ namespace });
          // open() gives its raw handle a namespace of its own: this one reads the stores' keys.
          const r = await openBackend({ redisUrl: url, dataDir, namespace, opTimeoutMs: 2_000, logger });
          opened.push({ stores: a, raw: r });
          const { stores: b } = await open({ namespace });
          const t = Date.now(); // a live record: the raw read below sees it
          const job = makeJob('sha-1', {
            taskId: 'sha-task-1',
            statusText: 'queued on the farm',
            createdAt: t,
            updatedAt: t,
          });
          await a.jobs.create(job);
          await a.jobs.apply('sha-1', { percentage: 10, at: t + 1 }); // a's memo: the text it wrote
          const stored = await r.cas?.read('job:sha-1');
          const monitor = createClient({ url });
          const sent: string[] = [];
          await monitor.connect();
          try {
            await monitor.MONITOR((line: string) => {
              if (line.includes('sha-1') && line.toLowerCase().includes('"evalsha"')) sent.push(line);
            });
            // b changes the record behind a's memo: a's write is refused, read again and merged.
            await b.jobs.apply('sha-1', { percentage: 30, at: t + 2 });
            const r2 = await a.jobs.apply('sha-1', { percentage: 20, statusText: 'rendering', at: t + 3 });
            expect(r2?.job.percentage).toBe(30);
            expect(r2?.job.statusText).toBe('rendering');
            await eventuallyTrue(() => sent.length >= 3); // b's write, a's refused one, a's retry
          } finally {
            monitor.destroy();
          }
          const expectedText = stored?.raw ?? '';
          expect(expectedText).toContain('queued on the farm');
          // b's write compared against the text a stored, by its SHA-1 ...
          expect(sent.some((l) => l.includes(createHash('sha1').update(expectedText).digest('hex')))).toBe(
            true,
          );
          // ... and no write carries a record twice (the text read beside the text to write).
          // MONITOR quotes each argument and escapes the quotes inside: a record starts `{\"value\":`.
          for (const l of sent) expect(l.split('{\\"value\\":').length - 1, l.slice(0, 300)).toBe(1);
          const final = await a.jobs.get('sha-1');
          expect(final).toMatchObject({ percentage: 30, statusText: 'rendering' });
        });

      it('close is idempotent and later calls fail with StoreUnavailableError', async () => {
        const { stores: s } = await open();
        await s.jobs.create(makeJob('cl-1'));
        await s.close();
        await s.jobs.close();
        await expect(s.jobs.get('cl-1')).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(s.kv.set('x', 1, 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(s.jobs.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
      });
    },
  );

// ---------------------------------------------------------------------------
// Opening SQLite while another process uses the same file
// ---------------------------------------------------------------------------

describe('SQLite open: a file another connection holds', () => {
  const logger = pino({ level: 'silent' });
  const dirs: string[] = [];
  const freshDir = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'sqlite-open-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  // Regression: two bots starting at once on a new DATA_DIR. SQLite answers one of them
  // SQLITE_BUSY at once (no busy wait: it breaks a lock deadlock), which used to end its start.
  it('several openers of one new file at once all open it (x40)', async () => {
    for (let round = 0; round < 40; round++) {
      const dataDir = await freshDir();
      const opened = await Promise.all(
        [0, 1, 2].map(() => openBackend({ dataDir, namespace: 'race', opTimeoutMs: 2_000, logger })),
      );
      await opened[0]?.set('k', { round }, 60_000);
      for (const b of opened) expect(await b.get('k')).toEqual({ round });
      for (const b of opened) await b.close();
    }
  });

  it('a lock held longer than the busy timeout is waited out, within openWaitMs', async () => {
    const dataDir = await freshDir();
    const lock = await holdNewSqliteFile(dataDir);
    const opening = openBackend({ dataDir, namespace: 'held', opTimeoutMs: 100, openWaitMs: 5_000, logger });
    await sleep(400); // 4 × the busy timeout: a single attempt would have failed by now
    await lock.release();
    const b = await opening;
    await b.set('after', 1, 60_000);
    expect(await b.get('after')).toBe(1);
    await b.close();
  });

  it('a lock held past openWaitMs fails the open with SQLITE_BUSY, after waiting for it', async () => {
    const dataDir = await freshDir();
    const lock = await holdNewSqliteFile(dataDir);
    const started = Date.now();
    try {
      await expect(
        openBackend({ dataDir, namespace: 'held', opTimeoutMs: 100, openWaitMs: 500, logger }),
      ).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    } finally {
      await lock.release();
    }
  });

  it('an older world-readable database and its -wal/-shm are narrowed to 0600 on open; a new one is made 0600', async () => {
    const old = await freshDir();
    for (const f of ['bot.sqlite', 'bot.sqlite-wal', 'bot.sqlite-shm']) {
      await writeFile(join(old, f), '');
      await chmod(join(old, f), 0o644);
    }
    const b = await openBackend({ dataDir: old, namespace: 'modes', opTimeoutMs: 2_000, logger });
    await b.set('k', 1, 60_000);
    for (const f of await readdir(old))
      expect(`${f} ${((await stat(join(old, f))).mode & 0o777).toString(8)}`).toBe(`${f} 600`);
    await b.close();
    const made = join(await freshDir(), 'new');
    const c = await openBackend({ dataDir: made, namespace: 'modes', opTimeoutMs: 2_000, logger });
    await c.set('k', 1, 60_000);
    expect(((await stat(made)).mode & 0o777).toString(8)).toBe('700');
    for (const f of await readdir(made))
      expect(`${f} ${((await stat(join(made, f))).mode & 0o777).toString(8)}`).toBe(`${f} 600`);
    await c.close();
  });

  it('DATA_DIR lock: a second holder is refused with the first one’s pid, free again once released', async () => {
    const dataDir = await freshDir();
    const first = await lockDataDir(dataDir);
    const refused = await lockDataDir(dataDir).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect(refused).toMatchObject({ pid: process.pid });
    await first.release();
    const again = await lockDataDir(dataDir);
    await again.release();
  });

  it('an error other than SQLITE_BUSY is not retried', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'bot.sqlite'), 'this is not a database, and long enough to show it '.repeat(4));
    const started = Date.now();
    await expect(
      openBackend({ dataDir: dir, namespace: 'bad', opTimeoutMs: 100, openWaitMs: 10_000, logger }),
    ).rejects.toMatchObject({ code: 'SQLITE_NOTADB' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

// ---------------------------------------------------------------------------
// Redis outage: a private redis-server we can stop and start
// ---------------------------------------------------------------------------

describe('Redis outage (private redis-server)', needs('redisServer'), () => {
  let port = 0;
  let dir = '';
  const unhandled: unknown[] = [];
  const onUnhandled = (error: unknown): void => void unhandled.push(error);

  let redis: PrivateRedis;
  const startRedis = (): Promise<void> => redis.start();
  // Outage = SHUTDOWN NOSAVE: these tests do not need the data to survive.
  const stopRedis = (): Promise<void> => redis.kill();

  beforeAll(async () => {
    redis = await privateRedis();
    port = redis.port;
    dir = redis.dir;
    process.on('unhandledRejection', onUnhandled);
    process.on('uncaughtException', onUnhandled);
  });

  afterEach(async () => {
    await stopRedis();
  });

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'fails fast while Redis is down and recovers by itself when it comes back',
    { timeout: 60_000 },
    async () => {
      const opTimeoutMs = 800;
      const bound = opTimeoutMs + 400;
      const { logger, lines } = captureLogger();

      // 1. Redis not running at all when the store is created.
      let started = performance.now();
      const stores = await createStores({
        operations: jobOperations,
        redisUrl: `redis://127.0.0.1:${port}`,
        dataDir: dir,
        namespace: uniqueNamespace('outage'),
        opTimeoutMs,
        logger,
      });
      expect(performance.now() - started).toBeLessThan(bound);
      expect(stores.backend).toBe('redis');

      const job = makeJob('out-1');
      const ops: [string, () => Promise<unknown>][] = [
        ['ping', () => stores.jobs.ping()],
        ['get', () => stores.jobs.get('out-1')],
        ['create', () => stores.jobs.create(job)],
        ['apply', () => stores.jobs.apply('out-1', { percentage: 5, at: 2_000 })],
        ['getByTaskId', () => stores.jobs.getByTaskId('t')],
        ['listByUser', () => stores.jobs.listByUser('user-default')],
        ['listOpen', () => stores.jobs.listOpen()],
        ['kv.get', () => stores.kv.get('k')],
        ['kv.set', () => stores.kv.set('k', 1, 1_000)],
        ['kv.delete', () => stores.kv.delete('k')],
      ];
      for (const [label, op] of ops) await expectUnavailableWithin(`down at start: ${label}`, op, bound);

      // 2. Redis comes up: the same store starts working without being recreated.
      await startRedis();
      started = performance.now();
      await waitForPing(stores, 10_000);
      const firstRecovery = performance.now() - started;
      await stores.jobs.create(job);
      expect(
        (await stores.jobs.apply('out-1', { state: 'queued', taskId: 'task-out-1', at: 2_000 }))?.changed,
      ).toBe(true);
      expect((await stores.jobs.getByTaskId('task-out-1'))?.id).toBe('out-1');

      // 3. Redis dies: every call, even 20 at once, rejects within the bound.
      await stopRedis();
      const burst = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const [label, op] = ops[i % ops.length] as [string, () => Promise<unknown>];
          return expectUnavailableWithin(`down after stop: ${label}`, op, bound);
        }),
      );
      for (const [label, op] of ops) await expectUnavailableWithin(`still down: ${label}`, op, bound);
      await sleep(300);
      for (const [label, op] of ops) await expectUnavailableWithin(`still down later: ${label}`, op, bound);

      // 4. Redis is back (empty: no persistence): the store works again by itself.
      await startRedis();
      started = performance.now();
      await waitForPing(stores, 10_000);
      const secondRecovery = performance.now() - started;
      expect(await stores.jobs.get('out-1')).toBeUndefined();
      await stores.jobs.create(job);
      expect(
        (await stores.jobs.apply('out-1', { state: 'processing', percentage: 40, at: 3_000 }))?.job
          .percentage,
      ).toBe(40);
      await stores.kv.set('k', { back: true }, 5_000);
      expect(await stores.kv.get('k')).toEqual({ back: true });

      await stores.close();
      await stopRedis();

      // Nothing crashed or went unhandled, the logs were not flooded, and no secret leaked.
      expect(unhandled).toEqual([]);
      const errorLines = lines.filter((l) => l.includes('store backend error'));
      const failures = ops.length * 3 + burst.length;
      expect(errorLines.length).toBeGreaterThan(0);
      expect(errorLines.length).toBeLessThan(failures / 2);
      const all = lines.join('');
      for (const secret of [job.secret, job.message.interaction?.token ?? ''])
        expect(all).not.toContain(secret);

      console.info(
        `[store.test] redis outage: ${failures} failed calls (max ${Math.max(...burst).toFixed(0)}ms in the burst), ` +
          `${errorLines.length} warn lines, recovery ${firstRecovery.toFixed(0)}ms / ${secondRecovery.toFixed(0)}ms`,
      );
    },
  );

  it(
    'a hung Redis (SIGSTOP) makes calls time out within opTimeoutMs, then recovers',
    { timeout: 60_000 },
    async () => {
      const opTimeoutMs = 500;
      const { logger } = captureLogger();
      await startRedis();
      const stores = await createStores({
        operations: jobOperations,
        redisUrl: `redis://127.0.0.1:${port}`,
        dataDir: dir,
        namespace: uniqueNamespace('hung'),
        opTimeoutMs,
        logger,
      });
      const job = makeJob('hung-1');
      await stores.jobs.create(job);
      const info = spawnSync('redis-cli', ['-p', String(port), 'info', 'server']).stdout.toString();
      const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
      expect(pid).toBeGreaterThan(0);

      process.kill(pid, 'SIGSTOP');
      try {
        // Different keys at once: each bounded by opTimeoutMs.
        await Promise.all([
          expectUnavailableWithin('hung get', () => stores.jobs.get('hung-1'), opTimeoutMs + 400),
          expectUnavailableWithin('hung ping', () => stores.jobs.ping(), opTimeoutMs + 400),
          expectUnavailableWithin('hung kv.set', () => stores.kv.set('k', 1, 1_000), opTimeoutMs + 400),
        ]);
        // Several applies to ONE job queue on its lock, but none waits forever.
        const lockWaitMs = 5 * opTimeoutMs;
        await Promise.all(
          [1, 2, 3].map((i) =>
            expectUnavailableWithin(
              `hung apply ${i}`,
              () => stores.jobs.apply('hung-1', { percentage: i, at: 2_000 + i }),
              lockWaitMs + 2 * opTimeoutMs,
            ),
          ),
        );
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await waitForPing(stores, 10_000);
      expect(
        (await stores.jobs.apply('hung-1', { state: 'processing', percentage: 50, at: 3_000 }))?.job
          .percentage,
      ).toBe(50);
      await stores.close();
      expect(unhandled).toEqual([]);
    },
  );
});

async function waitForPing(stores: Stores, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    try {
      await stores.jobs.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}
