/**
 * The job lifecycle and its keeper (JobWatch on in-process checks) on a real SQLite store,
 * with the clock and timers faked: polls, webhook silence, unknown submission outcomes,
 * the maximum duration, and what a final job still needs, step by step in virtual time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MediaOutcomeUnknownError } from '../src/services/media/errors.js';
import type { Operation, TaskResult } from '../src/services/media/types.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import type { JobRecord } from '../src/services/store/types.js';
import { inProcessJobs, type JobCore } from './helpers/jobs.js';

const silent = pino({ level: 'silent' });
const SECOND = 1000;
const MINUTE = 60 * SECOND;

let dir: string;
let stores: Stores;
let core: JobCore | undefined;
/** Reads the keeper made: [taskId, virtual time]. */
let reads: [string, number][];
/** What the service says of a task when read. */
let answer: (taskId: string) => TaskResult;

const processing = (taskId: string, percentage: number): TaskResult => ({
  operation: 'song',
  taskId,
  state: 'processing',
  percentage,
  raw: {},
});
const finished = (taskId: string): TaskResult => ({
  operation: 'song',
  taskId,
  state: 'finished',
  outputs: { kind: 'song', songs: [{ songId: 's1', audioUrl: 'https://cdn.example/s1.mp3' }] },
  raw: {},
});

beforeEach(async () => {
  // Only timers and the clock are virtual: SQLite's own I/O callbacks stay real.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  dir = await mkdtemp(join(tmpdir(), 'mediabot-keeper-'));
  stores = await createStores({
    operations: jobOperations,
    dataDir: dir,
    logger: silent,
    namespace: 'keeper',
  });
  reads = [];
  answer = (taskId) => processing(taskId, 10);
});
afterEach(async () => {
  await core?.stop();
  core = undefined;
  vi.useRealTimers();
  await stores.close();
  await rm(dir, { recursive: true, force: true });
});

function start(options: Parameters<typeof inProcessJobs>[0]['options'] = {}): JobCore {
  core = inProcessJobs({
    store: stores.jobs,
    logger: silent,
    reader: {
      read: async (_op: Operation, taskId: string) => {
        reads.push([taskId, Date.now()]);
        return answer(taskId);
      },
    },
    options: { maxDurationMs: 30 * MINUTE, pollInitialMs: 2 * SECOND, pollMaxMs: 20 * SECOND, ...options },
  });
  return core;
}

async function newJob(c: JobCore): Promise<JobRecord> {
  return c.lifecycle.create({
    operation: 'song',
    userId: 'u1',
    message: { channelId: 'c1', guildId: 'g1', messageId: 'm1' },
    params: {},
  });
}

/**
 * Lets the store's real I/O (SQLite on libuv's threads) finish between virtual-time steps:
 * a few milliseconds of real time, counted by performance.now (not faked).
 */
async function settle(): Promise<void> {
  const until = performance.now() + 8;
  while (performance.now() < until) await new Promise<void>((r) => setImmediate(r));
}

/** Lets real I/O finish until `cond` holds (at most 10 s of real time), virtual time standing still. */
async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await cond()) && performance.now() < deadline) await settle();
}

/**
 * Moves virtual time on a step at a time; after each step, the checks it started finish
 * (real I/O) before the clock moves again, however slow the machine: a check still
 * running would reschedule late in virtual time.
 */
async function advance(ms: number, step = 250): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    await vi.advanceTimersByTimeAsync(step);
    await settle();
    await until(() => (core?.checks.inFlightCount() ?? 0) === 0);
  }
}

describe('polling (no PUBLIC_URL)', () => {
  it('polls first after POLL_INITIAL_MS, then ever less often as the job ages, never past POLL_MAX_MS', async () => {
    const c = start();
    const job = await newJob(c);
    const t0 = Date.now();
    await c.lifecycle.submit(job, async () => ({ taskId: 'task-1' }));
    await advance(3 * MINUTE, 500);
    const times = reads.map(([, at]) => at - t0);
    expect(times[0]).toBeGreaterThanOrEqual(2 * SECOND);
    expect(times[0]).toBeLessThanOrEqual(3 * SECOND);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(20 * SECOND * 1.2 + 500);
    // Later gaps are longer than the first ones (the backoff grows with age).
    expect((gaps.at(-1) ?? 0) > (gaps[0] ?? 0)).toBe(true);
    expect(reads.every(([id]) => id === 'task-1')).toBe(true);
  });

  it('a poll answering for another task changes nothing', async () => {
    const c = start();
    const job = await newJob(c);
    await c.lifecycle.submit(job, async () => ({ taskId: 'task-1' }));
    answer = () => finished('someone-elses-task');
    await advance(5 * SECOND);
    expect(reads.length).toBeGreaterThan(0);
    const stored = await stores.jobs.get(job.id);
    expect(stored?.state).toBe('queued');
    expect(stored?.result).toBeUndefined();
  });

  it('a finished poll ends the job: final shown once asked, after-final work run, the keeper stops', async () => {
    const c = start();
    const job = await newJob(c);
    await c.lifecycle.submit(job, async () => ({ taskId: 'task-1' }));
    answer = finished;
    await advance(3 * SECOND);
    await until(() => c.settled.length > 0);
    const final = await stores.jobs.get(job.id);
    expect(final?.state).toBe('finished');
    expect(c.settled).toEqual([job.id]);
    expect(c.changed.filter((j) => j.state === 'finished')).toHaveLength(1);
    // The final edit has not been reported delivered: the keeper asks for it again, then stops once it is.
    await advance(31 * SECOND, 1000);
    expect(c.changed.filter((j) => j.state === 'finished').length).toBeGreaterThanOrEqual(2);
    await c.lifecycle.mark(job.id, { finalShown: true });
    await advance(31 * SECOND, 1000); // the keeper's next look finds it closed
    const before = c.changed.length;
    const readsBefore = reads.length;
    await advance(2 * MINUTE, 1000);
    expect(c.changed.length).toBe(before);
    expect(reads.length).toBe(readsBefore);
    expect(c.checks.pending()).toBe(0);
    expect(await stores.jobs.listOpen()).toEqual([]);
  });
});

describe('with webhooks (PUBLIC_URL)', () => {
  it('webhooks keep the poll away; once they go silent for WEBHOOK_SILENCE_MS the job is polled', async () => {
    const c = start({ publicUrl: 'https://bot.example', webhookSilenceMs: 10 * SECOND });
    const job = await newJob(c);
    await c.lifecycle.submit(job, async () => ({ taskId: 'task-1' }));
    // A webhook every 4 s for a minute: no poll.
    for (let k = 1; k <= 15; k++) {
      await advance(4 * SECOND, 1000);
      await c.lifecycle.applyResult(job.id, processing('task-1', k * 5), 'webhook');
    }
    expect(reads).toEqual([]);
    // Then silence: a poll within the silence (plus one check step).
    const silentFrom = Date.now();
    await advance(12 * SECOND, 500);
    expect(reads).toHaveLength(1);
    expect((reads[0]?.[1] ?? 0) - silentFrom).toBeGreaterThanOrEqual(10 * SECOND);
  });
});

describe('a submission whose answer was lost', () => {
  it('waits as “not confirmed” (never sent again, never polled), then fails with its credits back at the maximum duration', async () => {
    const c = start({ maxDurationMs: 10 * MINUTE });
    const job = await newJob(c);
    let calls = 0;
    await c.lifecycle.submit(job, async () => {
      calls++;
      throw new MediaOutcomeUnknownError('answer lost');
    });
    expect((await stores.jobs.get(job.id))?.state).toBe('unconfirmed');
    await advance(9 * MINUTE, SECOND);
    expect(calls).toBe(1);
    expect(reads).toEqual([]);
    expect((await stores.jobs.get(job.id))?.state).toBe('unconfirmed');
    await advance(2 * MINUTE, SECOND);
    await until(() => c.settled.length > 0);
    const failed = await stores.jobs.get(job.id);
    expect(failed?.state).toBe('failed');
    expect(failed?.error?.code).toBe('not_confirmed');
    expect(c.settled).toEqual([job.id]);
  });

  it('a webhook at its URL confirms it: the task is attached and polled like any other from then on', async () => {
    const c = start({ publicUrl: 'https://bot.example', webhookSilenceMs: 10 * SECOND });
    const job = await newJob(c);
    await c.lifecycle.submit(job, async () => {
      throw new MediaOutcomeUnknownError('answer lost');
    });
    await advance(30 * SECOND, 1000);
    expect(reads).toEqual([]);
    await c.lifecycle.applyResult(job.id, processing('late-task', 20), 'webhook');
    expect(await stores.jobs.get(job.id)).toMatchObject({ state: 'processing', taskId: 'late-task' });
    await advance(12 * SECOND, 500);
    expect(reads.map(([id]) => id)).toEqual(['late-task']);
  });

  it('a job cut off mid-submission (its instance died) becomes “not confirmed” once no submission can still be in flight', async () => {
    const c = start();
    const job = await newJob(c);
    // Nothing answers: the record stays `submitting` (as after a crash), its keeper checks.
    await c.checks.schedule(job.id, 0);
    await advance(5 * MINUTE, SECOND);
    expect((await stores.jobs.get(job.id))?.state).toBe('submitting');
    await advance(6 * MINUTE, SECOND); // past the grace (10 min in these tests)
    expect((await stores.jobs.get(job.id))?.state).toBe('unconfirmed');
  });
});
