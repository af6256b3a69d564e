import { describe, expect, it } from 'vitest';
import { isClosed, mergeJob } from '../src/services/store/merge.js';
import type { JobRecord, JobUpdate } from '../src/services/store/types.js';

function baseJob(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    id: 'job-1',
    secret: 'feedface',
    operation: 'song',
    userId: 'user-1',
    message: { channelId: 'chan-1' },
    params: { prompt: 'hello' },
    state: 'submitting',
    percentage: 0,
    createdAt: 1_000,
    updatedAt: 1_000,
    version: 0,
    ...overrides,
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Applies updates in order, starting from a frozen copy (merge must never mutate). */
function fold(job: JobRecord, updates: readonly JobUpdate[]): JobRecord {
  return updates.reduce((acc, update) => mergeJob(deepFreeze(acc), update).job, job);
}

function hasUndefinedValues(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some((inner) => inner === undefined || hasUndefinedValues(inner));
}

// Small deterministic PRNG (mulberry32) so failures are reproducible.
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

/**
 * ~50 updates as a real job produces them: a queued, the submit response with
 * the taskId, progress 0..100 (with duplicates, some with status text), and the
 * finished webhook (also duplicated). Event times are plausible: nothing is
 * observed after the finish.
 */
function lifecycleUpdates(random: () => number): JobUpdate[] {
  const updates: JobUpdate[] = [
    { state: 'queued', at: 2_001 },
    { state: 'queued', taskId: 'task-1', at: 2_002 },
    { statusText: 'uploading photos', at: 2_050 },
    { state: 'processing', percentage: 130, at: 2_060 },
  ];
  while (updates.length < 46) {
    const pct = Math.floor(random() * 101);
    const update: JobUpdate = {
      state: random() < 0.8 ? 'processing' : 'queued',
      percentage: pct,
      at: 2_100 + pct * 10 + Math.floor(random() * 5),
    };
    if (random() < 0.3) update.statusText = `working ${pct}%`;
    if (random() < 0.2) update.taskId = 'task-1';
    updates.push(update);
    if (random() < 0.35) updates.push({ ...update });
  }
  const finished: JobUpdate = {
    state: 'finished',
    taskId: 'task-1',
    statusText: 'done',
    result: { kind: 'song', songs: [{ songId: 's1', audioUrl: 'https://cdn.example/s1.mp3' }] },
    at: 9_000,
  };
  updates.push(finished, { ...finished }, { ...finished, percentage: 100 });
  return updates;
}

function withoutVersion(job: JobRecord): Omit<JobRecord, 'version'> {
  const { version: _version, ...rest } = job;
  return rest;
}

describe('mergeJob', () => {
  describe('state', () => {
    it('moves forward', () => {
      const r = mergeJob(baseJob(), { state: 'queued', at: 2_000 });
      expect(r.changed).toBe(true);
      expect(r.job.state).toBe('queued');
      const r2 = mergeJob(r.job, { state: 'processing', at: 2_001 });
      expect(r2.job.state).toBe('processing');
    });

    it('never moves backwards', () => {
      const job = deepFreeze(baseJob({ state: 'processing', percentage: 40 }));
      const r = mergeJob(job, { state: 'queued', at: 2_000 });
      expect(r.changed).toBe(false);
      expect(r.job.state).toBe('processing');
      expect(r.job.version).toBe(0);
    });

    it('can skip states (submitting -> finished)', () => {
      const r = mergeJob(baseJob(), { state: 'finished', at: 2_000 });
      expect(r.job.state).toBe('finished');
      expect(r.job.finishedAt).toBe(2_000);
    });

    it('a final job never changes again; the first terminal state wins', () => {
      const failed = mergeJob(baseJob(), {
        state: 'failed',
        error: { code: 'service_rejected', message: 'no' },
        at: 2_000,
      }).job;
      deepFreeze(failed);
      for (const late of [
        { state: 'finished', result: { kind: 'video', videoUrl: 'https://x/v.mp4' }, at: 3_000 },
        { state: 'processing', percentage: 90, at: 3_000 },
        { taskId: 'late-task', messageId: 'late-msg', statusText: 'late', at: 3_000 },
        { state: 'failed', error: { code: 'other', message: 'other' }, at: 3_000 },
      ] satisfies JobUpdate[]) {
        const r = mergeJob(failed, late);
        expect(r.changed).toBe(false);
        expect(r.job).toBe(failed);
      }
    });
  });

  describe('eventsApart (the store keeps re-deliveries’ times beside the record)', () => {
    it('a re-delivery that only moves lastEventAt: the same object back, its time as eventAt', () => {
      const job = fold(baseJob(), [{ state: 'processing', percentage: 20, at: 2_000 }]);
      const r = mergeJob(
        deepFreeze(job),
        { state: 'processing', percentage: 20, at: 2_500 },
        { eventsApart: true },
      );
      expect(r).toEqual({ job, changed: false, eventAt: 2_500 });
      expect(r.job).toBe(job);
      // Without the option, a copy carries the time (what other callers get).
      const copy = mergeJob(job, { state: 'processing', percentage: 20, at: 2_500 });
      expect(copy.job).not.toBe(job);
      expect(copy.job.lastEventAt).toBe(2_500);
      expect(copy).not.toHaveProperty('eventAt');
    });

    it('an older re-delivery moves nothing (no eventAt); a real change is merged as always', () => {
      const job = fold(baseJob(), [{ state: 'processing', percentage: 20, at: 2_000 }]);
      const old = mergeJob(job, { state: 'processing', percentage: 20, at: 1_500 }, { eventsApart: true });
      expect(old).toEqual({ job, changed: false });
      const moved = mergeJob(job, { state: 'processing', percentage: 30, at: 2_500 }, { eventsApart: true });
      expect(moved.changed).toBe(true);
      expect(moved.job).toMatchObject({ percentage: 30, lastEventAt: 2_500 });
      expect(moved).not.toHaveProperty('eventAt');
    });
  });

  describe('percentage', () => {
    it('keeps the maximum', () => {
      const a = fold(baseJob(), [
        { percentage: 40, at: 2_000 },
        { percentage: 20, at: 2_001 },
      ]);
      expect(a.percentage).toBe(40);
      const r = mergeJob(a, { percentage: 39, at: 2_002 });
      expect(r.changed).toBe(false);
    });

    it('is clamped to an integer 0..100 and ignores non-finite values', () => {
      expect(mergeJob(baseJob(), { percentage: 150, at: 2_000 }).job.percentage).toBe(100);
      expect(mergeJob(baseJob(), { percentage: -5, at: 2_000 }).job.percentage).toBe(0);
      expect(mergeJob(baseJob(), { percentage: 33.6, at: 2_000 }).job.percentage).toBe(34);
      const nan = mergeJob(baseJob({ percentage: 10 }), { percentage: Number.NaN, at: 2_000 });
      expect(nan.job.percentage).toBe(10);
      expect(nan.changed).toBe(false);
    });

    it('becomes 100 on finished, stays on failed', () => {
      expect(mergeJob(baseJob({ percentage: 30 }), { state: 'finished', at: 2_000 }).job.percentage).toBe(
        100,
      );
      expect(mergeJob(baseJob({ percentage: 30 }), { state: 'failed', at: 2_000 }).job.percentage).toBe(30);
    });
  });

  it('sets taskId once; a different later taskId is ignored', () => {
    const job = fold(baseJob(), [
      { taskId: 'task-a', at: 2_000 },
      { taskId: 'task-b', at: 2_001 },
    ]);
    expect(job.taskId).toBe('task-a');
    expect(mergeJob(job, { taskId: 'task-b', at: 2_002 }).changed).toBe(false);
  });

  it('a gallery post is bookkeeping set once, even on a final job (no version bump)', () => {
    const done = baseJob({ state: 'finished', percentage: 100, finishedAt: 2_000, version: 3 });
    const post = { channelId: 'gal', messageId: 'm-1' };
    const first = mergeJob(deepFreeze(done), { galleryPost: post, at: 3_000 });
    expect(first).toMatchObject({ changed: false, job: { galleryPost: post, version: 3 } });
    const again = mergeJob(deepFreeze(first.job), {
      galleryPost: { channelId: 'x', messageId: 'm-2' },
      at: 4_000,
    });
    expect(again.job).toBe(first.job);
  });

  it('what an edit learned (token refused, DM notice, DM refused) is bookkeeping set once, at its first time', () => {
    const running = baseJob({ state: 'processing', percentage: 40, version: 2, personal: true });
    const refused = mergeJob(deepFreeze(running), { tokenRefused: true, at: 3_000 });
    expect(refused).toMatchObject({ changed: false, job: { tokenRefusedAt: 3_000, version: 2 } });
    expect(mergeJob(deepFreeze(refused.job), { tokenRefused: true, at: 4_000 })).toMatchObject({
      changed: false,
      job: { tokenRefusedAt: 3_000 },
    });
    const noticed = mergeJob(deepFreeze(refused.job), { dmNotice: true, at: 5_000 });
    expect(noticed.job).toMatchObject({ dmNoticeAt: 5_000, tokenRefusedAt: 3_000, personal: true });
    const done = mergeJob(deepFreeze(noticed.job), { state: 'finished', at: 6_000 }).job;
    const closedDms = mergeJob(deepFreeze(done), { dmRefused: true, settled: true, at: 7_000 });
    expect(closedDms).toMatchObject({ changed: false, job: { dmRefused: true, settledAt: 7_000 } });
    // Nowhere left to show the final: the job leaves the open set.
    expect(isClosed(closedDms.job)).toBe(true);
    expect(isClosed(done)).toBe(false);
  });

  it('textWithheld: set once (AutoMod), even on a final job, and shown (changed, version bump)', () => {
    const done = baseJob({
      state: 'finished',
      percentage: 100,
      finishedAt: 2_000,
      updatedAt: 2_000,
      version: 3,
    });
    const r = mergeJob(deepFreeze(done), { textWithheld: true, at: 5_000 });
    expect(r).toMatchObject({ changed: true, job: { textWithheld: true, version: 4, state: 'finished' } });
    expect(mergeJob(deepFreeze(r.job), { textWithheld: true, at: 6_000 })).toEqual({
      job: r.job,
      changed: false,
    });
  });

  it('removed: set once by a moderator, even on a final job, and shown (changed, version bump)', () => {
    const done = baseJob({
      state: 'finished',
      percentage: 100,
      finishedAt: 2_000,
      updatedAt: 2_000,
      version: 3,
    });
    const r = mergeJob(deepFreeze(done), { removed: { by: 'mod-1' }, at: 5_000 });
    expect(r).toMatchObject({
      changed: true,
      job: { removed: { at: 5_000, by: 'mod-1' }, version: 4, updatedAt: 5_000 },
    });
    expect(r.job.state).toBe('finished');
    const again = mergeJob(deepFreeze(r.job), { removed: { by: 'mod-2' }, at: 6_000 });
    expect(again).toEqual({ job: r.job, changed: false });
    // A running job taken down still moves on (its result is never shown: see render).
    const running = mergeJob(deepFreeze(baseJob({ state: 'processing', percentage: 10 })), {
      removed: { by: 'm' },
      at: 7,
    });
    expect(mergeJob(running.job, { state: 'finished', at: 8 }).job).toMatchObject({
      state: 'finished',
      removed: { by: 'm' },
    });
  });

  it('sets messageId once', () => {
    const job = fold(baseJob(), [
      { messageId: 'm1', at: 2_000 },
      { messageId: 'm2', at: 2_001 },
    ]);
    expect(job.message).toEqual({ channelId: 'chan-1', messageId: 'm1' });
  });

  describe('statusText', () => {
    it('the latest event wins, whatever the arrival order', () => {
      const a = fold(baseJob(), [
        { statusText: 'first', at: 2_000 },
        { statusText: 'second', at: 2_001 },
      ]);
      const b = fold(baseJob(), [
        { statusText: 'second', at: 2_001 },
        { statusText: 'first', at: 2_000 },
      ]);
      expect(a.statusText).toBe('second');
      expect(b.statusText).toBe('second');
      expect(a.statusAt).toBe(2_001);
      expect(withoutVersion(a)).toEqual(withoutVersion(b));
    });

    it('ties on `at` are broken by the text, not the order', () => {
      const x: JobUpdate = { statusText: 'aaa', at: 2_000 };
      const y: JobUpdate = { statusText: 'bbb', at: 2_000 };
      expect(fold(baseJob(), [x, y]).statusText).toBe('bbb');
      expect(fold(baseJob(), [y, x]).statusText).toBe('bbb');
    });

    it('a lower-state update never replaces the text of a higher-state one, even if later', () => {
      const job = fold(baseJob(), [{ state: 'processing', statusText: 'processing text', at: 5_000 }]);
      const r = mergeJob(job, { state: 'queued', statusText: 'stale queue text', at: 6_000 });
      expect(r.job.statusText).toBe('processing text');
      expect(r.changed).toBe(false);
      const reversed = fold(baseJob(), [
        { state: 'queued', statusText: 'stale queue text', at: 6_000 },
        { state: 'processing', statusText: 'processing text', at: 5_000 },
      ]);
      expect(reversed).toMatchObject({ statusText: 'processing text', statusAt: 5_000, statusRank: 2 });
    });

    it('a text-less state change does not decide which text wins (order independence)', () => {
      const q: JobUpdate = { state: 'queued', statusText: 'in queue', at: 6_000 };
      const p: JobUpdate = { state: 'processing', at: 5_000 };
      expect(fold(baseJob(), [q, p]).statusText).toBe('in queue');
      expect(fold(baseJob(), [p, q]).statusText).toBe('in queue');
    });
  });

  describe('result and error', () => {
    it('result only with finished', () => {
      const result = { kind: 'video', videoUrl: 'https://x/v.mp4' } as const;
      expect(mergeJob(baseJob(), { state: 'processing', result, at: 2_000 }).job.result).toBeUndefined();
      expect(mergeJob(baseJob(), { state: 'failed', result, at: 2_000 }).job.result).toBeUndefined();
      expect(mergeJob(baseJob(), { state: 'finished', result, at: 2_000 }).job.result).toEqual(result);
    });

    it('error only with failed', () => {
      const error = { code: 'timed_out', message: 'took too long' };
      expect(mergeJob(baseJob(), { state: 'processing', error, at: 2_000 }).job.error).toBeUndefined();
      expect(mergeJob(baseJob(), { state: 'finished', error, at: 2_000 }).job.error).toBeUndefined();
      const failed = mergeJob(baseJob(), { state: 'failed', error, at: 2_000 }).job;
      expect(failed.error).toEqual(error);
      expect(failed.finishedAt).toBe(2_000);
    });
  });

  describe('timestamps and version', () => {
    it('a change bumps version, updatedAt = max(updatedAt, at), lastEventAt = max', () => {
      const r = mergeJob(baseJob(), { percentage: 10, at: 2_000 });
      expect(r.job).toMatchObject({ version: 1, updatedAt: 2_000, lastEventAt: 2_000 });
      const older = mergeJob(r.job, { percentage: 20, at: 1_500 });
      expect(older.job).toMatchObject({ version: 2, updatedAt: 2_000, lastEventAt: 2_000, percentage: 20 });
    });

    it('a duplicate is unchanged and returns the same object', () => {
      const update: JobUpdate = { state: 'processing', percentage: 10, statusText: 'x', at: 2_000 };
      const once = mergeJob(baseJob(), update).job;
      const twice = mergeJob(deepFreeze(once), { ...update });
      expect(twice.changed).toBe(false);
      expect(twice.job).toBe(once);
    });

    it('a newer duplicate only moves lastEventAt (changed: false, no version bump)', () => {
      const once = mergeJob(baseJob(), { state: 'processing', percentage: 10, at: 2_000 }).job;
      const later = mergeJob(once, { state: 'processing', percentage: 10, at: 2_500 });
      expect(later.changed).toBe(false);
      expect(later.job).not.toBe(once);
      expect(later.job).toEqual({ ...once, lastEventAt: 2_500 });
    });

    it('a re-delivered identical text with a newer `at` is bookkeeping, not a change', () => {
      const once = mergeJob(baseJob(), { state: 'processing', statusText: 'same', at: 2_000 }).job;
      const again = mergeJob(deepFreeze(once), { state: 'processing', statusText: 'same', at: 2_500 });
      expect(again.changed).toBe(false);
      expect(again.job).toEqual({ ...once, statusAt: 2_500, lastEventAt: 2_500 });
    });

    it('rejects a non-finite `at`', () => {
      expect(() => mergeJob(baseJob(), { percentage: 1, at: Number.NaN })).toThrow(TypeError);
    });
  });

  it('never writes undefined into optional fields and never mutates its input', () => {
    const job = deepFreeze(baseJob());
    const r = mergeJob(job, { state: 'queued', at: 2_000 });
    expect(hasUndefinedValues(r.job)).toBe(false);
    expect(Object.keys(r.job)).not.toContain('taskId');
    expect(Object.keys(r.job)).not.toContain('statusText');
    expect(Object.keys(r.job.message)).not.toContain('messageId');
  });

  describe('order independence (property)', () => {
    it('200 permutations of ~50 updates with duplicates converge to the identical record', () => {
      const random = rng(0x5eed);
      const updates = lifecycleUpdates(random);
      expect(updates.length).toBeGreaterThanOrEqual(48);
      const reference = fold(baseJob(), updates);
      expect(reference).toMatchObject({
        state: 'finished',
        percentage: 100,
        taskId: 'task-1',
        statusText: 'done',
        statusAt: 9_000,
        finishedAt: 9_000,
        updatedAt: 9_000,
        lastEventAt: 9_000,
      });
      expect(hasUndefinedValues(reference)).toBe(false);
      for (let i = 0; i < 200; i += 1) {
        const final = fold(baseJob(), shuffle(updates, random));
        // Everything but `version`, which counts the updates that changed something
        // and therefore depends on the order by design.
        expect(withoutVersion(final)).toStrictEqual(withoutVersion(reference));
        expect(final.version).toBeGreaterThanOrEqual(1);
        expect(final.version).toBeLessThanOrEqual(updates.length);
      }
    });

    it('also before the end: without a terminal update the live record converges too', () => {
      // The terminal freeze hides most rules in the final record; this checks
      // percentage = max, latest statusText, taskId and lastEventAt = max seen.
      // Not `updatedAt` ("last changed"): which of several equivalent updates
      // happens to make a change depends on the order, like `version`.
      const live = (job: JobRecord): Omit<JobRecord, 'version' | 'updatedAt'> => {
        const { version: _v, updatedAt: _u, ...rest } = job;
        return rest;
      };
      const random = rng(0xbeef);
      for (let set = 0; set < 25; set += 1) {
        const updates = lifecycleUpdates(random).filter((u) => u.state !== 'finished');
        const reference = fold(baseJob(), updates);
        expect(reference.state).toBe('processing');
        expect(reference.taskId).toBe('task-1');
        for (let i = 0; i < 8; i += 1) {
          expect(live(fold(baseJob(), shuffle(updates, random)))).toStrictEqual(live(reference));
        }
      }
    });

    it('holds across many different update sets', () => {
      const random = rng(42);
      for (let set = 0; set < 25; set += 1) {
        const updates = lifecycleUpdates(random);
        const reference = withoutVersion(fold(baseJob(), updates));
        for (let i = 0; i < 8; i += 1) {
          expect(withoutVersion(fold(baseJob(), shuffle(updates, random)))).toStrictEqual(reference);
        }
      }
    });
  });
});
