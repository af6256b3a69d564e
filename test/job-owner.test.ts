/**
 * JobService with several instances, on the job-service side of the ownership
 * contract (a recording JobOwner; the Redis side is test/cluster.test.ts):
 * after-final work runs on the job's owner and the job stays open until it is
 * done; a non-owner that applies a final leaves it to the owner; an instance
 * taking over a final job runs it again; the first progress edit offers the job
 * to a less busy instance, and a job handed over is no longer polled here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobService, type EditSink, type JobOwner } from '../src/services/jobs/job-service.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import type { JobRecord, JobStore } from '../src/services/store/types.js';
import type { TaskResult } from '../src/services/media/types.js';

const logger = pino({ level: 'silent' });

class RecordingOwner implements JobOwner {
  readonly instanceId = 'me';
  readonly owned = new Set<string>();
  readonly released: string[] = [];
  readonly routed: string[] = [];
  readonly offers: string[] = [];
  /** Who claim() says holds a job nobody holds here. */
  holder = 'me';
  /** handOff(): whether the job moves (after `release` agreed). */
  moves = false;
  owns(jobId: string): boolean {
    return this.owned.has(jobId);
  }
  async claim(jobId: string): Promise<string> {
    if (this.holder === 'me') this.owned.add(jobId);
    return this.holder;
  }
  async route(jobId: string, source: string): Promise<boolean> {
    this.routed.push(`${jobId} ${source}`);
    return (await this.claim(jobId)) === 'me';
  }
  async release(jobId: string, done: boolean): Promise<void> {
    this.owned.delete(jobId);
    this.released.push(`${jobId} ${done ? 'done' : 'open'}`);
  }
  async handOff(jobId: string, release: () => boolean): Promise<boolean> {
    this.offers.push(jobId);
    if (!this.moves || !release()) return false;
    this.owned.delete(jobId);
    return true;
  }
}

class RecordingEdits implements EditSink {
  readonly pushed: { jobId: string; final: boolean }[] = [];
  readonly handedOver: string[] = [];
  push(req: { jobId: string; final: boolean }): void {
    this.pushed.push({ jobId: req.jobId, final: req.final });
  }
  handOver(jobId: string): boolean {
    this.handedOver.push(jobId);
    return true;
  }
}

/** A promise settled from outside. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => undefined as void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const tick = () => new Promise((r) => setTimeout(r, 20));

describe('JobService with job ownership', () => {
  let stores: Stores;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'mediabot-owner-'));
    stores = await createStores({ dataDir, logger });
  });
  afterAll(async () => {
    await stores?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const setup = (opts: { finalShown?: boolean; store?: JobStore } = {}) => {
    const owner = new RecordingOwner();
    const edits = new RecordingEdits();
    const finals: string[] = [];
    let afterFinal = deferred();
    const jobs = new JobService({
      store: opts.store ?? stores.jobs,
      ownership: owner,
      media: {
        fetchTask: async () => {
          throw new Error('not polled in this test');
        },
      },
      edits,
      render: () => ({ content: 'x', embeds: [], components: [], allowed_mentions: { parse: [] } }),
      logger,
      onFinal: async (job) => {
        finals.push(job.id);
        await afterFinal.promise;
      },
      finalShown: async () => opts.finalShown ?? false,
      options: {
        publicUrl: 'https://bot.example',
        maxDurationMs: 3_600_000,
        pollInitialMs: 60_000,
        pollMaxMs: 60_000,
        webhookSilenceMs: 60_000,
      },
    });
    const newJob = () =>
      jobs.create({
        operation: 'song',
        userId: '1',
        message: { channelId: '2', messageId: '3' },
        params: { task_id: 't', song_id: 's', continue_at: 30 },
      });
    const finished = (job: JobRecord): TaskResult => ({
      operation: 'song',
      taskId: job.taskId ?? 'task',
      state: 'finished',
      outputs: { kind: 'song', songs: [], videoUrl: 'https://cdn.example/v.mp4' },
      raw: {},
    });
    return {
      owner,
      edits,
      finals,
      jobs,
      newJob,
      finished,
      resetAfterFinal: () => (afterFinal = deferred()),
      settleAfterFinal: () => afterFinal.resolve(),
    };
  };

  it('the owner runs the after-final work; the job leaves the open list only once it and the final edit are done', async () => {
    const t = setup();
    const job = await t.newJob();
    await t.jobs.applyResult(job.id, t.finished(job), 'webhook');
    expect(t.finals).toEqual([job.id]);
    t.jobs.delivered(job.id, true); // the final edit reached Discord
    await tick();
    expect(t.owner.released).toEqual([]); // the gallery post is still being made
    t.settleAfterFinal();
    await tick();
    expect(t.owner.released).toEqual([`${job.id} done`]);
  });

  it('a non-owner that applies a final hands it to the owner and runs nothing itself', async () => {
    const t = setup();
    t.owner.holder = 'other';
    const job = await t.newJob();
    await t.jobs.applyResult(job.id, t.finished(job), 'webhook');
    await tick();
    expect(t.owner.routed).toEqual([`${job.id} webhook`]);
    expect(t.finals).toEqual([]);
    expect(t.edits.pushed).toEqual([]);
  });

  it('taking over a final job whose message already shows it runs the after-final work again before letting go', async () => {
    const t = setup({ finalShown: true });
    t.owner.holder = 'other';
    const job = await t.newJob();
    await t.jobs.applyResult(job.id, t.finished(job), 'webhook'); // stored final, owner elsewhere
    t.owner.holder = 'me';
    t.owner.owned.add(job.id); // the sweep claimed it: the owner died
    await t.jobs.adopt(job.id);
    expect(t.finals).toEqual([job.id]);
    expect(t.edits.pushed).toEqual([]); // never edited again
    await tick();
    expect(t.owner.released).toEqual([]);
    t.settleAfterFinal();
    await tick();
    expect(t.owner.released).toEqual([`${job.id} done`]);
  });

  // Regression: ownership was checked only before the poll's store read, so a job handed
  // over during that read was fetched by both instances (seen in the replicas test on CI).
  it('a job handed over while its poll reads the store is not fetched here', async () => {
    const owner = new RecordingOwner();
    const fetched: string[] = [];
    const watched: { id?: string } = {};
    // The store as it is, except that reading the watched job moves it to another instance.
    const store = new Proxy(stores.jobs, {
      get(target, prop) {
        if (prop === 'get') {
          return async (id: string) => {
            const job = await target.get(id);
            if (id === watched.id) owner.owned.delete(id);
            return job;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const jobs = new JobService({
      store,
      ownership: owner,
      media: {
        fetchTask: async (operation, taskId) => {
          fetched.push(taskId);
          return { operation, taskId, state: 'processing', percentage: 20, raw: {} };
        },
      },
      edits: new RecordingEdits(),
      render: () => ({ content: 'x', embeds: [], components: [], allowed_mentions: { parse: [] } }),
      logger,
      onFinal: async () => undefined,
      finalShown: async () => false,
      options: {
        publicUrl: 'https://bot.example',
        maxDurationMs: 3_600_000,
        pollInitialMs: 30,
        pollMaxMs: 30,
        webhookSilenceMs: 30,
      },
    });
    const params = { task_id: 't', song_id: 's', continue_at: 30 };
    const message = { channelId: '2', messageId: '3' };
    const kept = await jobs.create({ operation: 'song', userId: '1', message, params });
    const moved = await jobs.create({ operation: 'song', userId: '1', message, params });
    for (const job of [kept, moved]) {
      await jobs.update(job.id, { state: 'queued', taskId: `task-${job.id}`, at: Date.now() });
      await jobs.applyResult(
        job.id,
        { operation: 'song', taskId: `task-${job.id}`, state: 'processing', percentage: 10, raw: {} },
        'webhook',
      );
    }
    watched.id = moved.id;
    await new Promise((r) => setTimeout(r, 400));
    jobs.stop();
    expect(fetched).toContain(`task-${kept.id}`); // polling itself works
    expect(fetched).not.toContain(`task-${moved.id}`);
  });

  it('the first progress edit offers the job once; a job handed over is not polled here any more', async () => {
    const t = setup();
    const job = await t.newJob();
    const queued = await t.jobs.update(job.id, { state: 'queued', taskId: `task-${job.id}`, at: Date.now() });
    expect(queued?.taskId).toBeDefined();
    await t.jobs.applyResult(
      job.id,
      { operation: 'song', taskId: queued?.taskId ?? '', state: 'processing', percentage: 10, raw: {} },
      'webhook',
    );
    expect(t.jobs.pendingPolls()).toBe(1);
    // Balanced already (handOff says no): kept and still polled; not offered twice.
    t.jobs.delivered(job.id, false);
    await tick();
    t.jobs.delivered(job.id, false);
    await tick();
    expect(t.owner.offers).toEqual([job.id]);
    expect(t.jobs.pendingPolls()).toBe(1);
    // Another job, and this time it moves: the edit queue let it go, the poll stops.
    t.owner.moves = true;
    const other = await t.newJob();
    await t.jobs.applyResult(
      other.id,
      { operation: 'song', taskId: `task-${other.id}`, state: 'processing', percentage: 5, raw: {} },
      'webhook',
    );
    expect(t.jobs.pendingPolls()).toBe(2);
    t.jobs.delivered(other.id, false);
    await tick();
    expect(t.edits.handedOver).toEqual([other.id]);
    expect(t.jobs.pendingPolls()).toBe(1);
    t.jobs.stop();
  });

  // Regression (memory): recovery read every unfinished record before resuming any, so with
  // 10 000 jobs all their records were alive at once and ended as old-generation garbage.
  it('restart recovery resumes a page of jobs before it reads the next page', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mediabot-recover-'));
    const own = await createStores({ dataDir: dir, logger });
    try {
      // The real store, with its pages watched as recovery takes them: each page's ids and
      // how many jobs had been shown (edits pushed) when it was read.
      const pages: { ids: string[]; shownBefore: number }[] = [];
      const store = Object.create(own.jobs) as JobStore;
      const t = setup({ store });
      store.unfinishedPages = async function* () {
        for await (const page of own.jobs.unfinishedPages()) {
          pages.push({ ids: page.map((j) => j.id), shownBefore: t.edits.pushed.length });
          yield page;
        }
      };
      for (let i = 0; i < 230; i++) {
        const job = await t.newJob();
        await own.jobs.apply(job.id, { state: 'processing', taskId: `task-${i}`, at: Date.now() });
      }
      t.edits.pushed.length = 0;
      expect(await t.jobs.recover()).toEqual({ resumed: 230, failed: 0 });
      t.jobs.stop();
      expect(pages.length).toBe(3);
      for (const [k, page] of pages.entries()) {
        const next = pages[k + 1];
        if (!next) continue;
        // Every job of page k was resumed (shown) before page k + 1 was read.
        const shown = new Set(t.edits.pushed.slice(0, next.shownBefore).map((p) => p.jobId));
        for (const id of page.ids) expect(shown.has(id)).toBe(true);
      }
      expect(t.owner.owned.size).toBe(230);
    } finally {
      await own.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
