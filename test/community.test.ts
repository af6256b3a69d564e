/**
 * Community servers: per-guild settings, fair use and credits. The ledger runs on
 * both stores (SQLite always, Redis at REDIS_URL); the e2e part runs /settings and
 * real submissions against the fake Discord and the emulator.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FairUseLedger, nextUtcMidnight } from '../src/services/community/fair-use.js';
import { GuildSettingsStore } from '../src/services/community/settings.js';
import { GalleryPoster, UPLOAD_LEASE_MS } from '../src/services/community/gallery.js';
import { compileAllowList } from '../src/services/net/address-policy.js';
import { ByteBudget } from '../src/services/net/byte-budget.js';
import { createSafeDownloader } from '../src/services/net/safe-download.js';
import { oncePerJob } from '../src/services/discord/message-nonce.js';
import type { JobRecord } from '../src/services/store/types.js';
import { refusalMessage } from '../src/services/community/community.js';
import { t, translator } from '../src/i18n/index.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import { NONCE_WINDOW_MS } from './fake-discord/index.js';
import { eventually, REDIS_URL, startHarness, type Harness } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';
import { jobOperations, renderOperations } from '../src/services/operations/index.js';
import { createJobRenderer } from '../src/services/discord/render/job-render.js';

const jobRender = createJobRenderer(renderOperations);

const logger = pino({ level: 'silent' });
/** The gallery's download side (these jobs have no files). */
const downloads = () => ({
  downloader: createSafeDownloader(),
  allow: compileAllowList({ origins: [], cidrs: [] }),
  memory: new ByteBudget(16 * 1024 * 1024),
});
const DEFAULTS = { threads: false, maxActiveJobs: 3, cooldownSeconds: 0, dailyCredits: 0 };

for (const redis of [false, true])
  describe(`settings and ledger on ${redis ? 'redis' : 'sqlite'}`, redis ? needs('redis') : {}, () => {
    let stores: Stores;
    let dataDir: string;
    let clock = Date.UTC(2026, 10, 23, 12, 0, 0);
    const now = () => clock;
    const storeNamespace = `c${randomBytes(4).toString('hex')}`;
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'mediabot-community-'));
      stores = await createStores({
        operations: jobOperations,
        ...(redis ? { redisUrl: REDIS_URL } : {}),
        dataDir,
        namespace: storeNamespace,
        logger,
      });
    });
    afterAll(async () => {
      await stores?.close();
      await rm(dataDir, { recursive: true, force: true });
    });
    /** A finished upscale in guild `g`, as the gallery gets it. */
    const finishedUpscale = (g: string): JobRecord => ({
      id: randomUUID(),
      secret: 's',
      operation: 'upscale',
      userId: '555555555555555555',
      message: { channelId: '666666666666666666', guildId: g },
      params: { prompt: 'cat' },
      state: 'finished',
      percentage: 100,
      createdAt: clock,
      updatedAt: clock,
      version: 1,
    });

    // Crash safety: a post claimed by an instance that died before posting was lost (the
    // claim never lapsed); now a claim lapses and the next caller posts, exactly once.
    it('gallery claims: a dead poster’s claim lapses and the next owner posts once; a done post is never repeated', async () => {
      const settings = new GuildSettingsStore({ kv: stores.kv, defaults: DEFAULTS });
      const g = '333333333333333333';
      await settings.set(g, { gallery: '444444444444444444' });
      const posts: string[] = [];
      const rest = {
        get: async () => ({ premium_tier: 0 }),
        post: async (route: string) => {
          posts.push(route);
          return { id: '555555555555555555', channel_id: '444444444444444444' };
        },
        delete: async () => undefined,
      };
      const recorded: unknown[] = [];
      const recordPost = async (jobId: string, post: unknown) => void recorded.push({ jobId, post });
      const poster = new GalleryPoster({
        render: jobRender,
        rest,
        settings,
        recordPost,
        kv: stores.kv,
        logger,
        now,
        ...downloads(),
      });
      const job = finishedUpscale(g);
      // An instance claimed the post and died: its claim is live for a while, then lapses.
      await stores.kv.set(
        `gallery-posted:${job.id}`,
        { at: clock, token: 'dead', until: clock + 1000 },
        60_000,
      );
      clock += 1001;
      expect(await poster.post(job)).toBe('posted');
      expect(posts).toEqual(['/channels/444444444444444444/messages']);
      expect(recorded).toEqual([
        { jobId: job.id, post: { channelId: '444444444444444444', messageId: '555555555555555555' } },
      ]);
      // Posted: a retry, another instance or a takeover never posts again.
      expect(await poster.post(job)).toBe('skipped');
      expect(posts).toHaveLength(1);
      // A mark from before claims could lapse ({at} alone) counts as posted.
      const old = { ...job, id: randomUUID() };
      await stores.kv.set(`gallery-posted:${old.id}`, { at: clock }, 60_000);
      expect(await poster.post(old)).toBe('skipped');
      expect(posts).toHaveLength(1);
    });

    // Regression: an instance that died right after Discord took its post left a claim for
    // 6 minutes, and the next owner then posted a second copy. The claim now lapses within
    // UPLOAD_LEASE_MS of the upload, inside the window in which Discord answers the same
    // enforced nonce with the first post.
    it('gallery: the next owner after a crash mid-upload posts with the same enforced nonce, within Discord’s nonce window', async () => {
      const settings = new GuildSettingsStore({ kv: stores.kv, defaults: DEFAULTS });
      const g = '777777777777777777';
      await settings.set(g, { gallery: '888888888888888888' });
      const bodies: { nonce?: unknown; enforce_nonce?: unknown }[] = [];
      const rest = (hang: boolean) => ({
        get: async () => ({ premium_tier: 0 }),
        post: async (_route: string, opts?: { body?: unknown }) => {
          bodies.push(opts?.body as { nonce?: unknown; enforce_nonce?: unknown });
          // The dying instance: Discord has the post, the instance never hears back.
          return hang ? new Promise<never>(() => undefined) : { id: '1', channel_id: '888888888888888888' };
        },
        delete: async () => undefined,
      });
      const recordPost = async () => undefined;
      const job = finishedUpscale(g);
      const dying = new GalleryPoster({
        render: jobRender,
        rest: rest(true),
        settings,
        recordPost,
        kv: stores.kv,
        logger,
        now,
        ...downloads(),
      });
      void dying.post(job);
      await eventually(() => bodies.length === 1, 5_000, 'the first post reaching Discord');
      const postedAt = clock;
      const mark = (await stores.kv.get(`gallery-posted:${job.id}`)) as { until: number };
      expect(mark.until - postedAt).toBe(UPLOAD_LEASE_MS);
      expect(UPLOAD_LEASE_MS).toBeLessThan(NONCE_WINDOW_MS);
      // Until the claim lapses the next owner leaves it alone; then it posts, same nonce.
      clock = mark.until + 1;
      const next = new GalleryPoster({
        render: jobRender,
        rest: rest(false),
        settings,
        recordPost,
        kv: stores.kv,
        logger,
        now,
        ...downloads(),
      });
      expect(await next.post(job)).toBe('posted');
      expect(bodies).toHaveLength(2);
      expect(bodies[1]).toMatchObject(oncePerJob('gallery', job.id));
      expect(bodies[1]?.nonce).toBe(bodies[0]?.nonce);
      expect(String(bodies[0]?.nonce).length).toBeLessThanOrEqual(25);
      // Within Discord's window: Discord answers it with the first post, no second copy.
      expect(clock - postedAt).toBeLessThan(NONCE_WINDOW_MS);
    });

    it('settings: defaults, set, show sources, reset one and all', async () => {
      const s = new GuildSettingsStore({ kv: stores.kv, defaults: DEFAULTS });
      const g = '111111111111111111';
      expect(await s.get(g)).toEqual(DEFAULTS);
      await s.set(g, { threads: true, gallery: '222222222222222222', dailyCredits: 50 });
      let v = await s.view(g);
      expect(v.effective).toEqual({
        ...DEFAULTS,
        threads: true,
        gallery: '222222222222222222',
        dailyCredits: 50,
      });
      expect([...v.own].sort()).toEqual(['daily_credits', 'gallery', 'threads']);
      await s.recordGalleryError(g, 'Missing Access (50001)', clock);
      expect((await s.view(g)).galleryError?.message).toBe('Missing Access (50001)');
      await s.reset(g, 'gallery');
      v = await s.view(g);
      expect(v.effective.gallery).toBeUndefined();
      expect(v.galleryError).toBeUndefined();
      expect(v.effective.threads).toBe(true);
      await s.reset(g, 'all');
      expect(await s.get(g)).toEqual(DEFAULTS);
      expect((await s.view(g)).own.size).toBe(0);
    });

    it('settings: a burst of commands in one server reads them once; a change is seen by the next read', async () => {
      let reads = 0;
      const kv = Object.create(stores.kv) as typeof stores.kv;
      kv.get = (k) => {
        if (k.startsWith('guild-settings:')) reads++;
        return stores.kv.get(k);
      };
      const s = new GuildSettingsStore({ kv, defaults: DEFAULTS });
      const g = '111111111111111113';
      const burst = await Promise.all(Array.from({ length: 20 }, () => s.get(g)));
      expect(burst.every((v) => v.maxActiveJobs === DEFAULTS.maxActiveJobs)).toBe(true);
      expect(reads).toBe(1);
      await s.set(g, { maxActiveJobs: 7 });
      expect((await s.get(g)).maxActiveJobs).toBe(7);
      // Reads of different servers are their own.
      await Promise.all([s.get(g), s.get('111111111111111114')]);
      expect(reads).toBeGreaterThanOrEqual(4);
      // A read under way when a change lands (it may have read before the write) is not
      // joined by a read begun after the change: here a slow one, still out after `set`.
      let slow = false;
      kv.get = (async (k: string) => {
        const v = await stores.kv.get(k);
        if (slow) await new Promise((r) => setTimeout(r, 200));
        return v;
      }) as typeof kv.get;
      slow = true;
      const during = s.get(g);
      await s.set(g, { maxActiveJobs: 9 });
      slow = false;
      expect((await s.get(g)).maxActiveJobs).toBe(9);
      expect((await during).maxActiveJobs).toBe(7);
    });

    it('fair use: 4 simultaneous submissions with max 2 → exactly 2 accepted; release frees a slot', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, now });
      const settings = { maxActiveJobs: 2, cooldownSeconds: 0, dailyCredits: 0 };
      const ids = ['a', 'b', 'c', 'd'];
      const results = await Promise.all(
        ids.map((jobId) => ledger.reserve({ scope: 'g1', userId: 'u1', jobId, cost: 1, limits: settings })),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(2);
      const refused = results.find((r) => !r.ok);
      expect(refused && !refused.ok && refused.refusal).toEqual({ kind: 'active', count: 2, max: 2 });
      // Another member and another guild are not affected.
      expect(
        (await ledger.reserve({ scope: 'g1', userId: 'u2', jobId: 'e', cost: 1, limits: settings })).ok,
      ).toBe(true);
      expect(
        (await ledger.reserve({ scope: 'g2', userId: 'u1', jobId: 'f', cost: 1, limits: settings })).ok,
      ).toBe(true);
      const accepted = ids.filter((_, i) => results[i]?.ok);
      await ledger.release({ scope: 'g1', userId: 'u1', jobId: accepted[0] ?? '', refund: false });
      await ledger.release({ scope: 'g1', userId: 'u1', jobId: accepted[0] ?? '', refund: false }); // idempotent
      expect(
        (await ledger.reserve({ scope: 'g1', userId: 'u1', jobId: 'g', cost: 1, limits: settings })).ok,
      ).toBe(true);
      expect(
        (await ledger.reserve({ scope: 'g1', userId: 'u1', jobId: 'h', cost: 1, limits: settings })).ok,
      ).toBe(false);
    });

    it('members of one server do not wait for each other’s records', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, now });
      const free = { maxActiveJobs: 2, cooldownSeconds: 0, dailyCredits: 5 };
      // A slow store update of one member's record (a storm of their finals, a slow disk).
      let release = () => undefined as void;
      const held = stores.kv.update(
        ['fair-use:g7:busy'],
        () => new Promise<{ result: undefined }>((r) => (release = () => r({ result: undefined }))),
      );
      // Another member of the server is admitted meanwhile, credits and all.
      expect(
        (await ledger.reserve({ scope: 'g7', userId: 'other', jobId: 'o1', cost: 1, limits: free })).ok,
      ).toBe(true);
      // The busy member waits for their own record, then is admitted.
      let done = false;
      const busy = ledger
        .reserve({ scope: 'g7', userId: 'busy', jobId: 'b1', cost: 1, limits: free })
        .finally(() => (done = true));
      await new Promise((t) => setTimeout(t, 100));
      expect(done, 'busy waits').toBe(false);
      release();
      await held;
      expect((await busy).ok).toBe(true);
      expect(await ledger.creditsUsed('g7')).toBe(2);
    });

    it('credits are counted without a budget too; a refund gives them back; a budget set later sees them', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, now });
      const free = { maxActiveJobs: 10, cooldownSeconds: 0, dailyCredits: 0 };
      const many = await Promise.all(
        ['f1', 'f2', 'f3', 'f4'].map((jobId) =>
          ledger.reserve({ scope: 'g8', userId: `u-${jobId}`, jobId, cost: 2, limits: free }),
        ),
      );
      expect(many.every((r) => r.ok)).toBe(true);
      // Without a budget the count is written beside the reservation, just after it.
      await ledger.settled();
      expect(await ledger.creditsUsed('g8')).toBe(8);
      // A job that failed at submission gives its credits back; a job that ran keeps them spent.
      await ledger.release({ scope: 'g8', userId: 'u-f1', jobId: 'f1', refund: true });
      await ledger.release({ scope: 'g8', userId: 'u-f2', jobId: 'f2', refund: false });
      expect(await ledger.creditsUsed('g8')).toBe(6);
      // Refunded at once after the reservation: nothing is left over.
      expect(
        (await ledger.reserve({ scope: 'g8', userId: 'u-f5', jobId: 'f5', cost: 3, limits: free })).ok,
      ).toBe(true);
      await ledger.release({ scope: 'g8', userId: 'u-f5', jobId: 'f5', refund: true });
      expect(await ledger.creditsUsed('g8')).toBe(6);
      // A budget chosen later in the day counts what was spent before it.
      const r = await ledger.reserve({
        scope: 'g8',
        userId: 'u-f6',
        jobId: 'f6',
        cost: 3,
        limits: { ...free, dailyCredits: 8 },
      });
      expect(r).toEqual({
        ok: false,
        refusal: { kind: 'credits', left: 2, cost: 3, budget: 8, resetAt: nextUtcMidnight(clock) },
      });
    });

    it('a burst of commands in one server writes its credit counters a few times, every credit counted', async () => {
      const writes = new Map<string, number>();
      const kv = Object.create(stores.kv) as typeof stores.kv;
      kv.update = (keys, decide) => {
        for (const k of keys) writes.set(k, (writes.get(k) ?? 0) + 1);
        return stores.kv.update(keys, decide);
      };
      const ledger = new FairUseLedger({ kv, slotTtlMs: 3_600_000, now });
      const free = { maxActiveJobs: 10, cooldownSeconds: 0, dailyCredits: 0 };
      // The operator's counter is every server's (the other cases' too).
      const operatorBefore = await ledger.operatorCreditsUsed();
      const burst = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          ledger.reserve({ scope: 'g12', userId: `u${i}`, jobId: `j${i}`, cost: 2, limits: free }),
        ),
      );
      expect(burst.every((r) => r.ok)).toBe(true);
      await ledger.settled();
      expect(await ledger.creditsUsed('g12')).toBe(60);
      expect(await ledger.operatorCreditsUsed()).toBe(operatorBefore + 60);
      // The first add is written at once, the rest summed while it is under way.
      const day = new Date(clock).toISOString().slice(0, 10);
      for (const key of [`credits:g12:${day}`, `operator-credits:${day}`]) {
        expect(writes.get(key)).toBeGreaterThanOrEqual(1);
        expect(writes.get(key)).toBeLessThanOrEqual(5);
      }
      // A refund right after a reservation waits for the count it gives back.
      const r = await ledger.reserve({ scope: 'g12', userId: 'late', jobId: 'late', cost: 3, limits: free });
      expect(r.ok).toBe(true);
      await ledger.release({ scope: 'g12', userId: 'late', jobId: 'late', refund: true });
      expect(await ledger.creditsUsed('g12')).toBe(60);
    });

    it('a count that fails, its report failing too, loses its credits only: the key takes later counts and refunds', async () => {
      let failNext = true;
      const kv = Object.create(stores.kv) as typeof stores.kv;
      kv.update = (keys, decide) => {
        if (failNext && keys[0]?.startsWith('credits:g13:')) {
          failNext = false;
          return Promise.reject(new Error('store hiccup'));
        }
        return stores.kv.update(keys, decide);
      };
      const reported: number[] = [];
      const ledger = new FairUseLedger({
        kv,
        slotTtlMs: 3_600_000,
        now,
        onCountError: (_err, _key, credits) => {
          reported.push(credits);
          throw new Error('logging failed too');
        },
      });
      const free = { maxActiveJobs: 10, cooldownSeconds: 0, dailyCredits: 0 };
      expect(
        (await ledger.reserve({ scope: 'g13', userId: 'a', jobId: 'a1', cost: 2, limits: free })).ok,
      ).toBe(true);
      await ledger.settled();
      expect(reported).toEqual([2]);
      expect(await ledger.creditsUsed('g13')).toBe(0);
      // The key was not left "being written": a later count lands, and its refund is not held.
      expect(
        (await ledger.reserve({ scope: 'g13', userId: 'b', jobId: 'b1', cost: 3, limits: free })).ok,
      ).toBe(true);
      await ledger.settled();
      expect(await ledger.creditsUsed('g13')).toBe(3);
      await ledger.release({ scope: 'g13', userId: 'b', jobId: 'b1', refund: true });
      expect(await ledger.creditsUsed('g13')).toBe(0);
    });

    it('a slot whose job never ended expires with the job’s maximum duration', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 60_000, now });
      const settings = { maxActiveJobs: 1, cooldownSeconds: 0, dailyCredits: 0 };
      expect(
        (await ledger.reserve({ scope: 'g3', userId: 'u', jobId: 'x', cost: 1, limits: settings })).ok,
      ).toBe(true);
      expect(
        (await ledger.reserve({ scope: 'g3', userId: 'u', jobId: 'y', cost: 1, limits: settings })).ok,
      ).toBe(false);
      clock += 61_000;
      expect(
        (await ledger.reserve({ scope: 'g3', userId: 'u', jobId: 'y', cost: 1, limits: settings })).ok,
      ).toBe(true);
    });

    it('cooldown: refused until cooldown_seconds after the last submission, with the time to retry', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, now });
      const settings = { maxActiveJobs: 10, cooldownSeconds: 30, dailyCredits: 0 };
      const start = clock;
      expect(
        (await ledger.reserve({ scope: 'g4', userId: 'u', jobId: '1', cost: 1, limits: settings })).ok,
      ).toBe(true);
      clock += 10_000;
      const r = await ledger.reserve({ scope: 'g4', userId: 'u', jobId: '2', cost: 1, limits: settings });
      expect(r).toEqual({ ok: false, refusal: { kind: 'cooldown', retryAt: start + 30_000 } });
      const text = refusalMessage(r.ok ? { kind: 'active', count: 0, max: 0 } : r.refusal);
      expect(text(translator('en-US'))).toContain(`<t:${Math.ceil((start + 30_000) / 1000)}:R>`);
      // A German member reads it in German, the time unchanged.
      expect(text(translator('de'))).toMatch(/^Bitte warte .*<t:\d+:R>/);
      clock += 20_000;
      expect(
        (await ledger.reserve({ scope: 'g4', userId: 'u', jobId: '2', cost: 1, limits: settings })).ok,
      ).toBe(true);
    });

    it('credits: a submission over the budget is refused with what is left; a refund gives them back', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, now });
      const settings = { maxActiveJobs: 10, cooldownSeconds: 0, dailyCredits: 10 };
      expect(
        (await ledger.reserve({ scope: 'g5', userId: 'u', jobId: 'v1', cost: 6, limits: settings })).ok,
      ).toBe(true);
      expect(await ledger.creditsUsed('g5')).toBe(6);
      const r = await ledger.reserve({ scope: 'g5', userId: 'u', jobId: 'v2', cost: 6, limits: settings });
      expect(r).toEqual({
        ok: false,
        refusal: { kind: 'credits', left: 4, cost: 6, budget: 10, resetAt: nextUtcMidnight(clock) },
      });
      // Exactly what is left still fits.
      expect(
        (await ledger.reserve({ scope: 'g5', userId: 'u', jobId: 's1', cost: 4, limits: settings })).ok,
      ).toBe(true);
      expect(await ledger.creditsUsed('g5')).toBe(10);
      await ledger.release({ scope: 'g5', userId: 'u', jobId: 'v1', refund: true });
      await ledger.release({ scope: 'g5', userId: 'u', jobId: 'v1', refund: true }); // once only
      expect(await ledger.creditsUsed('g5')).toBe(4);
      await ledger.release({ scope: 'g5', userId: 'u', jobId: 's1', refund: false });
      expect(await ledger.creditsUsed('g5')).toBe(4);
      // Concurrent: 5 × cost 3 against 6 left → exactly 2 accepted.
      const many = await Promise.all(
        ['c1', 'c2', 'c3', 'c4', 'c5'].map((jobId) =>
          ledger.reserve({ scope: 'g5', userId: `u-${jobId}`, jobId, cost: 3, limits: settings }),
        ),
      );
      expect(many.filter((x) => x.ok)).toHaveLength(2);
      expect(await ledger.creditsUsed('g5')).toBe(10);
      // A new UTC day starts from zero.
      clock = nextUtcMidnight(clock) + 1000;
      expect(await ledger.creditsUsed('g5')).toBe(0);
    });

    it('the operator’s ceiling counts every server and member together; a refund gives it back', async () => {
      // A day of its own: the other tests' spending counts towards the operator's day too.
      clock = nextUtcMidnight(clock) + 1000;
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, operatorDailyCredits: 5, now });
      const open = { maxActiveJobs: 10, cooldownSeconds: 0, dailyCredits: 0 };
      const reserve = (scope: string, userId: string, jobId: string, cost: number) =>
        ledger.reserve({ scope, userId, jobId, cost, limits: open });
      expect(await ledger.operatorCreditsUsed()).toBe(0);
      expect(await reserve('op-a', 'u1', 'o1', 2)).toEqual({ ok: true, operatorCredits: 2 });
      expect((await reserve('op-b', 'u2', 'o2', 2)).ok).toBe(true);
      expect((await reserve(`personal:u3`, 'u3', 'o3', 1)).ok).toBe(true);
      // The day's last credit is gone: refused anywhere, saying when the day resets.
      expect(await reserve('op-c', 'u4', 'o4', 1)).toEqual({
        ok: false,
        refusal: { kind: 'operator', resetAt: nextUtcMidnight(clock) },
      });
      expect(await ledger.operatorCreditsUsed()).toBe(5);
      // A refused submission took nothing: the member's slot is free.
      expect(await ledger.release({ scope: 'op-c', userId: 'u4', jobId: 'o4', refund: true })).toBe(0);
      // A job that failed at submission gives its operator credits back; one that ran does not.
      expect(await ledger.release({ scope: 'op-a', userId: 'u1', jobId: 'o1', refund: true })).toBe(2);
      expect(await ledger.release({ scope: 'op-b', userId: 'u2', jobId: 'o2', refund: false })).toBe(0);
      expect(await ledger.operatorCreditsUsed()).toBe(3);
      expect((await reserve('op-c', 'u4', 'o5', 2)).ok).toBe(true);
      // Without a ceiling the spending is still counted.
      const uncapped = new FairUseLedger({ kv: stores.kv, slotTtlMs: 3_600_000, now });
      expect(
        (await uncapped.reserve({ scope: 'op-d', userId: 'u5', jobId: 'o6', cost: 50, limits: open })).ok,
      ).toBe(true);
      // Without a ceiling the count is written beside the reservation, just after it.
      await uncapped.settled();
      expect(await uncapped.operatorCreditsUsed()).toBe(55);
      clock = nextUtcMidnight(clock) + 1000;
    });

    it('a deleted running job keeps its slot until it would have ended', async () => {
      const ledger = new FairUseLedger({ kv: stores.kv, slotTtlMs: 10 * 3_600_000, now });
      const one = { maxActiveJobs: 1, cooldownSeconds: 0, dailyCredits: 0 };
      expect((await ledger.reserve({ scope: 'g8', userId: 'u', jobId: 'r1', cost: 1, limits: one })).ok).toBe(
        true,
      );
      await ledger.holdUntil({ scope: 'g8', userId: 'u', jobId: 'r1', until: clock + 60_000 });
      expect((await ledger.reserve({ scope: 'g8', userId: 'u', jobId: 'r2', cost: 1, limits: one })).ok).toBe(
        false,
      );
      clock += 61_000;
      expect((await ledger.reserve({ scope: 'g8', userId: 'u', jobId: 'r2', cost: 1, limits: one })).ok).toBe(
        true,
      );
    });

    // Regression: the reservation was a read and a write under a Redis lock with a ~6 s lease
    // and no fencing: an instance paused past the lease (GC, a stopped VM) wrote its stale
    // decision over another instance's reservation, and both took the last slot.
    it('an instance paused between its read and its write past any lease cannot overwrite another’s reservation', async () => {
      // Redis: a second instance (its own store and connection); SQLite: one process owns the file.
      const other = redis
        ? await createStores({
            operations: jobOperations,
            redisUrl: REDIS_URL,
            dataDir,
            namespace: storeNamespace,
            logger,
          })
        : stores;
      try {
        let resume = () => undefined as void;
        const gate = new Promise<void>((r) => (resume = r));
        let paused = 0;
        // Instance A decides on what it read, then stalls before writing.
        const stalled: typeof stores.kv = Object.assign(Object.create(stores.kv) as typeof stores.kv, {
          update: <T>(keys: readonly string[], decide: Parameters<typeof stores.kv.update<T>>[1]) =>
            stores.kv.update<T>(keys, async (values) => {
              const d = await decide(values);
              paused++;
              await gate;
              return d;
            }),
        });
        const limits = { maxActiveJobs: 1, cooldownSeconds: 0, dailyCredits: 3 };
        const a = new FairUseLedger({ kv: stalled, slotTtlMs: 3_600_000, operatorDailyCredits: 1_000, now });
        const b = new FairUseLedger({ kv: other.kv, slotTtlMs: 3_600_000, operatorDailyCredits: 1_000, now });
        const first = a.reserve({ scope: 'g9', userId: 'u', jobId: 'a1', cost: 2, limits });
        await eventually(() => paused === 1, 5_000, 'A paused after deciding');
        // Far past the old lock's lease (3 × the op timeout).
        clock += 7_000;
        const second = b.reserve({ scope: 'g9', userId: 'u', jobId: 'b1', cost: 2, limits });
        if (redis) {
          // Nothing for B to wait for: it takes the slot while A is paused.
          expect((await second).ok).toBe(true);
          resume();
          expect(await first).toEqual({ ok: false, refusal: { kind: 'active', count: 1, max: 1 } });
        } else {
          resume();
          expect((await first).ok).toBe(true);
          expect(await second).toEqual({ ok: false, refusal: { kind: 'active', count: 1, max: 1 } });
        }
        // One reservation stands, its credits counted once.
        expect(await a.creditsUsed('g9')).toBe(2);
      } finally {
        if (other !== stores) await other.close();
      }
    });
  });

describe('community e2e', () => {
  let h: Harness;
  let admin: string;
  let member: string;
  const replyText = async (cmd: { message(t?: number): Promise<{ data: Record<string, unknown> }> }) =>
    JSON.stringify((await cmd.message(10_000)).data);
  /** Today's credits as `/settings show` says them. */
  const usedNow = async () =>
    Number(
      /Credits today: \*\*(\d+)\*\*/.exec(
        await replyText(h.fake.sendCommand({ name: 'settings', subcommand: 'show', userId: admin })),
      )?.[1],
    );
  /** `/settings set` by the admin, answered. */
  const configure = (options: Record<string, string | number | boolean>) =>
    h.fake.sendCommand({ name: 'settings', subcommand: 'set', userId: admin, options }).message(10_000);

  beforeAll(async () => {
    h = await startHarness({ webhooks: true, env: { DEFAULT_MAX_ACTIVE_JOBS: '2' } });
    admin = h.fake.addUser({ username: 'admin', permissions: String((1n << 5n) | (1n << 11n)) });
    member = h.fake.addUser({ username: 'member', permissions: String(1n << 11n) });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('/settings is registered for Manage Server, guild-only', () => {
    const cmd = h.fake.guildCommands().find((c) => c['name'] === 'settings');
    expect(cmd?.['default_member_permissions']).toBe('32');
    expect(cmd?.['contexts']).toEqual([0]);
  });

  it('/settings refuses a member without Manage Server, ephemerally, and changes nothing', async () => {
    h.fake.setCommandPermission(h.fake.guildId, 'settings', member, true); // Discord hides /settings (Manage Server) unless an admin allows the member
    const cmd = h.fake.sendCommand({
      name: 'settings',
      subcommand: 'set',
      userId: member,
      options: { daily_credits: 1 },
    });
    const msg = await cmd.message(10_000);
    expect(msg.ephemeral).toBe(true);
    expect(JSON.stringify(msg.data)).toContain('Manage Server');
    const show = h.fake.sendCommand({ name: 'settings', subcommand: 'show', userId: admin });
    expect(await replyText(show)).toContain('daily_credits: **0 (no budget)** (default)');
  });

  it('/settings set → show → reset round trip (ephemeral)', async () => {
    const set = h.fake.sendCommand({
      name: 'settings',
      subcommand: 'set',
      userId: admin,
      options: { threads: true, cooldown_seconds: 0, daily_credits: 100 },
    });
    const msg = await set.message(10_000);
    expect(msg.ephemeral).toBe(true);
    const text = JSON.stringify(msg.data);
    expect(text).toContain('threads: **on** (this server)');
    expect(text).toContain('daily_credits: **100** (this server)');
    expect(text).toContain('max_active_jobs: **2** per member (default)');
    const none = h.fake.sendCommand({ name: 'settings', subcommand: 'set', userId: admin, options: {} });
    expect(await replyText(none)).toContain('at least one setting');
    const reset = h.fake.sendCommand({
      name: 'settings',
      subcommand: 'reset',
      userId: admin,
      options: { setting: 'all' },
    });
    const after = await replyText(reset);
    expect(after).toContain('threads: **off** (default)');
    expect(after).toContain('daily_credits: **0 (no budget)** (default)');
  });

  it('fair use: with 2 unfinished jobs a 3rd is refused before any service call; a finished one frees a slot', async () => {
    h.emulator.setScenario({ hold: true });
    const runSong = (userId: string) =>
      h.fake.sendCommand({
        name: 'extend-song',
        userId,
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      });
    const before = h.emulator.tasks.size;
    const four = [runSong(member), runSong(member), runSong(member), runSong(member)];
    const messages = await Promise.all(four.map((c) => c.message(10_000)));
    const publicOnes = messages.filter((m) => !m.ephemeral);
    const refusals = messages.filter((m) => m.ephemeral);
    expect(publicOnes).toHaveLength(2);
    expect(refusals).toHaveLength(2);
    expect(JSON.stringify(refusals[0]?.data)).toContain('when one of your 2 jobs finishes');
    await eventually(() => h.emulator.tasks.size === before + 2, 10_000, 'two tasks submitted');
    expect(h.emulator.tasks.size).toBe(before + 2);
    // Finish one: the member can submit again.
    const held = [...h.emulator.tasks.values()].filter((t) => t.operation === 'song' && !t.fixture);
    h.emulator.finish(held[0]?.id ?? '');
    await eventually(
      async () => {
        const cmd = runSong(member);
        const m = await cmd.message(10_000);
        return !m.ephemeral;
      },
      10_000,
      'a slot after a job finished',
    );
    for (const t of [...h.emulator.tasks.values()])
      if (t.operation === 'song' && !t.fixture && t.state !== 'finished') h.emulator.finish(t.id);
    h.emulator.setScenario({ hold: false });
    h.fake.assertNoViolations();
  });

  it('/settings show counts today’s use without a budget', async () => {
    await configure({ daily_credits: 0 });
    const before = await usedNow();
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: member,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    expect((await cmd.message(10_000)).ephemeral).toBe(false);
    await eventually(async () => (await usedNow()) === before + 2, 10_000, 'the song counted');
    const show = await replyText(h.fake.sendCommand({ name: 'settings', subcommand: 'show', userId: admin }));
    expect(show).toContain(t('en-US', 'settings.show.credits_no_budget', { used: before + 2 }));
    h.fake.assertNoViolations();
  });

  it('credits: the queued message shows the cost; over the budget is refused with what is left and the reset', async () => {
    // Today's earlier jobs count against a budget chosen now: 3 more credits.
    const spent = await usedNow();
    const budget = spent + 3;
    await configure({ daily_credits: budget, max_active_jobs: 10 });
    h.emulator.nextScenario({ hold: true });
    const first = h.fake.sendCommand({
      name: 'extend-song',
      userId: admin,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const msg = await first.message(10_000);
    expect(msg.ephemeral).toBe(false);
    expect(JSON.stringify(msg.data)).toContain('Cost: 2 credits');
    const second = h.fake.sendCommand({
      name: 'extend-song',
      userId: admin,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const refused = await second.message(10_000);
    expect(refused.ephemeral).toBe(true);
    const text = JSON.stringify(refused.data);
    expect(text).toContain(`1 of ${budget} left today`);
    expect(text).toMatch(/reset <t:\d+:R>/);
    // The same refusal to a German member: in German, with the same numbers and time.
    const german = await h.fake
      .sendCommand({
        name: 'extend-song',
        userId: admin,
        locale: 'de',
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
      })
      .message(10_000);
    expect(german.ephemeral).toBe(true);
    const [before] = t('de', 'refusal.credits', { left: 1, budget, cost: 2, resetAt: '@' }).split('@');
    expect(String(german.data['content'])).toContain(before);
    expect(String(german.data['content'])).toMatch(/<t:\d+:R>/);
    const show = await replyText(h.fake.sendCommand({ name: 'settings', subcommand: 'show', userId: admin }));
    expect(show).toContain(`Credits today: **${spent + 2}** of ${budget} used, 1 left`);
    const showDe = await replyText(
      h.fake.sendCommand({ name: 'settings', subcommand: 'show', userId: admin, locale: 'de' }),
    );
    expect(showDe).toContain(t('de', 'settings.show.title'));
    expect(showDe).toContain(t('de', 'settings.show.costs', { costs: '' }).slice(0, -1));
  });

  it('credits come back when the service refuses the submission', async () => {
    await configure({ daily_credits: 100 });
    const before = await usedNow();
    // An unknown parent task: the service answers 400 {errors:[{msg}]}.
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: admin,
      options: { task_id: 'no-such-task', song_id: 'no-such-song' },
    });
    await cmd.waitForMessage((m) => JSON.stringify(m.data).includes('not a known'), 10_000);
    await eventually(async () => (await usedNow()) === before, 5_000, 'credits refunded');
    h.fake.assertNoViolations();
  });

  // Discord allows 3 s for the first answer. Admission updates the member's fair-use record, which
  // their other commands and finals also update: a storm of finals (or a slow store) once kept
  // the command silent past Discord's limit.
  describe('a job command kept waiting by its member’s fair-use record (a slow store)', () => {
    const hold = (userId: string, ms: number) =>
      h.app.kv.update(
        [`fair-use:${h.fake.guildId}:${userId}`],
        () => new Promise<{ result: undefined }>((r) => setTimeout(() => r({ result: undefined }), ms)),
      );
    const song = (userId: string) =>
      h.fake.sendCommand({
        name: 'extend-song',
        userId,
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      });

    it('is deferred within Discord’s 3 s, then its reply becomes the job message', async () => {
      const user = h.fake.addUser({ username: 'slow-admit', permissions: String(1n << 11n) });
      const before = h.emulator.tasks.size;
      const held = hold(user, 2500);
      const cmd = song(user);
      // The fake fails an interaction not acknowledged within 3 s (as Discord does).
      expect((await cmd.response(3000)).type).toBe(5);
      await held;
      const msg = await cmd.waitForMessage(
        (m) => (m.data['embeds'] as unknown[] | undefined)?.length === 1,
        10_000,
      );
      expect(msg.ephemeral).toBe(false);
      await eventually(() => h.emulator.tasks.size === before + 1, 10_000, 'the job submitted');
      h.fake.assertNoViolations();
    });

    it('refused after the deferral: the placeholder goes, the refusal is ephemeral', async () => {
      await configure({ cooldown_seconds: 600 });
      const user = h.fake.addUser({ username: 'slow-refused', permissions: String(1n << 11n) });
      const first = h.emulator.tasks.size;
      expect((await song(user).message(10_000)).ephemeral).toBe(false);
      await eventually(() => h.emulator.tasks.size === first + 1, 10_000, 'the first job submitted');
      const before = h.emulator.tasks.size;
      const held = hold(user, 2500);
      const cmd = song(user);
      expect((await cmd.response(3000)).type).toBe(5);
      await held;
      await eventually(
        () =>
          cmd.followUps.some((m) => m.ephemeral && JSON.stringify(m.data).includes('you can submit again')),
        10_000,
        'the refusal, ephemeral',
      );
      expect(cmd.originalMessage?.deleted).toBe(true);
      expect(h.emulator.tasks.size).toBe(before);
      await configure({ cooldown_seconds: 0 });
      h.fake.assertNoViolations();
    });
  });
});
