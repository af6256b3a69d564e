/**
 * RETENTION_DAYS and /privacy's data service on real stores (SQLite, and Redis when it
 * answers): ended jobs go RETENTION_DAYS after they ended, hourly, in virtual time;
 * open and younger ones stay. MemberData exports and deletes a member's photo sessions
 * and reduces their consent records to the proof.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ConsentStore } from '../src/services/training/consent-store.js';
import { MemberData } from '../src/services/privacy/member-data.js';
import { PublicPosts } from '../src/services/privacy/public-posts.js';
import { RetentionSweeper, SWEEP_INTERVAL_MS } from '../src/services/privacy/retention.js';
import { TimerSchedule } from '../src/services/shared/periodic.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import type { JobRecord } from '../src/services/store/types.js';
import { TrainingSessions } from '../src/services/training/sessions.js';
import { FairUseLedger } from '../src/services/community/fair-use.js';
import { CommunityService } from '../src/services/community/community.js';
import { GuildSettingsStore } from '../src/services/community/settings.js';

import { REDIS_URL } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

const DEFAULT_SETTINGS = { threads: false, maxActiveJobs: 3, cooldownSeconds: 0, dailyCredits: 0 };

const logger = pino({ level: 'silent' });
const DAY = 86_400_000;

const dirs: string[] = [];
const opened: Stores[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
});

async function open(backend: 'sqlite' | 'redis'): Promise<Stores> {
  const dataDir = await mkdtemp(join(tmpdir(), 'retention-'));
  dirs.push(dataDir);
  const s = await createStores({
    operations: jobOperations,
    ...(backend === 'redis' ? { redisUrl: REDIS_URL } : {}),
    dataDir,
    namespace: `ret${randomBytes(4).toString('hex')}`,
    logger,
    jobTtlMs: 31 * DAY,
  });
  opened.push(s);
  return s;
}

function job(id: string, userId: string, at: number): JobRecord {
  return {
    id,
    secret: randomBytes(8).toString('hex'),
    operation: 'song',
    userId,
    message: { channelId: 'c1', guildId: 'g1', messageId: `m-${id}` },
    params: { prompt: 'x' },
    taskId: `task-${id}`,
    state: 'queued',
    percentage: 0,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
}

for (const backend of ['sqlite', 'redis'] as const)
  describe(`retention on ${backend}`, backend === 'redis' ? needs('redis') : {}, () => {
    it('an ended job goes RETENTION_DAYS after it ended (hourly sweep); younger and open ones stay', async () => {
      const stores = await open(backend);
      const t0 = Date.UTC(2026, 0, 1);
      let now = t0;
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      await stores.jobs.create(job('old', 'u1', t0));
      await stores.jobs.apply('old', { state: 'finished', result: { kind: 'upload' }, at: t0 + 1000 });
      await stores.jobs.create(job('young', 'u1', t0 + 10 * DAY));
      await stores.jobs.apply('young', {
        state: 'failed',
        error: { code: 'x', message: 'y' },
        at: t0 + 10 * DAY,
      });
      await stores.jobs.create(job('open', 'u1', t0));

      const sweeper = new RetentionSweeper({
        jobs: stores.jobs,
        retentionMs: 30 * DAY,
        logger,
        now: () => now,
      });
      // The in-process driver (the app's on SQLite; Redis has one Job Scheduler instead).
      const schedule = new TimerSchedule(logger);
      let sweeps = 0;
      schedule.add({
        name: 'retention-sweep',
        everyMs: SWEEP_INTERVAL_MS,
        run: () => {
          sweeps++;
          return sweeper.sweep();
        },
      });
      now = t0 + 30 * DAY; // 1 s short of 'old's retention
      await schedule.start();
      expect(sweeps).toBe(1);
      expect(await sweeper.sweep()).toBe(0); // joins the start's sweep
      expect(await stores.jobs.get('old')).toBeDefined();

      now += SWEEP_INTERVAL_MS;
      await vi.advanceTimersByTimeAsync(SWEEP_INTERVAL_MS - 1);
      expect(sweeps).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(sweeps).toBe(2);
      await schedule.close();
      await vi.advanceTimersByTimeAsync(3 * SWEEP_INTERVAL_MS);
      expect(sweeps).toBe(2);
      expect(await stores.jobs.get('old')).toBeUndefined();
      expect(await stores.jobs.getByTaskId('task-old')).toBeUndefined();
      expect(await stores.jobs.getByMessageId('m-old')).toBeUndefined();
      expect((await stores.jobs.get('young'))?.state).toBe('failed');
      expect((await stores.jobs.get('open'))?.state).toBe('queued');
      expect((await stores.jobs.listByUser('u1')).map((j) => j.id).sort()).toEqual(['open', 'young']);
    });

    it('a store that is down fails a sweep quietly; the next one catches up', async () => {
      const stores = await open(backend);
      let calls = 0;
      const sweeper = new RetentionSweeper({
        jobs: {
          sweepEnded: (before) => {
            calls++;
            return calls === 1 ? Promise.reject(new Error('store down')) : stores.jobs.sweepEnded(before);
          },
        },
        retentionMs: DAY,
        logger,
        now: () => Date.now(),
      });
      expect(await sweeper.sweep()).toBe(0);
      await stores.jobs.create(job('gone', 'u2', 0));
      await stores.jobs.apply('gone', { state: 'finished', result: { kind: 'upload' }, at: 1 });
      expect(await sweeper.sweep()).toBe(1);
    });

    it('MemberData: sessions exported without photo links and deleted; consent records kept, minimal', async () => {
      const stores = await open(backend);
      const now = () => Date.now();
      const sessions = new TrainingSessions({
        kv: stores.kv,
        logger,
        maxBytes: 1024 * 1024,
        ttlMs: DAY,
        refreshUrls: async () => undefined,
      });
      const consents = new ConsentStore({ kv: stores.kv, retentionMs: 365 * DAY });
      const member = '100000000000000001';
      await sessions.start({
        userId: member,
        channelId: 'c1',
        guildId: 'g1',
        ethnicity: 'white',
        gender: 'female',
        age: 30,
      });
      await sessions.start({
        userId: member,
        channelId: 'c2',
        guildId: 'g2',
        ethnicity: 'white',
        gender: 'female',
      });
      await sessions.start({
        userId: '100000000000000002',
        channelId: 'c1',
        ethnicity: 'white',
        gender: 'male',
      });
      await consents.record({
        userId: member,
        guildId: 'g1',
        channelId: 'c1',
        jobId: 'j1',
        wording: 'consent-v1',
        sha256: ['a'.repeat(64)],
      });
      const posts = new PublicPosts({
        kv: stores.kv,
        indexes: stores.indexes,
        operations: jobOperations.names,
      });
      const data = new MemberData({
        jobs: stores.jobs,
        sessions,
        consents,
        posts,
        // Never reached: this member has no job and no public post.
        cleanup: {
          clean: () => Promise.reject(new Error('no public post to clean')),
        },
        kv: stores.kv,
        community: new CommunityService({
          settings: new GuildSettingsStore({ kv: stores.kv, defaults: DEFAULT_SETTINGS }),
          ledger: new FairUseLedger({ kv: stores.kv, slotTtlMs: DAY }),
          costs: {}, // each command at its module's cost
          operator: {},
          jobMaxDurationMs: DAY,
          personal: { maxActiveJobs: 3, dailyCredits: 20 },
          logger,
        }),
        retention: { jobDays: 30, consentDays: 365, sessionHours: 24 },
        logger,
        now,
      });
      expect(await data.summary(member)).toEqual({ jobs: 0, sessions: 2, consents: 1, posts: 0 });
      const file = await data.exportFile(member);
      expect(file.name).toMatch(/\.json\.gz$/);
      const text = gunzipSync(file.data).toString();
      const exported = JSON.parse(text) as {
        photoSessions: { channel: string }[];
        consentRecords: object[];
      };
      expect(exported.photoSessions.map((s) => s.channel).sort()).toEqual(['c1', 'c2']);
      expect(exported.consentRecords[0]).toMatchObject({ job: 'j1', channel: 'c1', photoCount: 1 });
      expect(text).not.toMatch(/"url"|token/);

      const report = await data.delete(member);
      expect(report).toMatchObject({ jobs: 0, sessions: 2, consentsKept: 1 });
      expect(await sessions.listByMember(member)).toEqual([]);
      expect(await sessions.listByMember('100000000000000002')).toHaveLength(1);
      const [kept] = await consents.listByMember(member);
      expect(kept).toMatchObject({ minimized: true, guildId: 'g1', photoCount: 1 });
      expect(kept?.jobId).toBeUndefined();
      expect(kept?.channelId).toBeUndefined();
    });
  });
