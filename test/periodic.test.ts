/**
 * Periodic tasks (the retention sweep, the account reading) run once per period for the whole
 * deployment: in process on a timer each (virtual time), on Redis through one BullMQ Job
 * Scheduler each, so two instances sharing a Redis run a task once per period, not twice.
 */
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openBull } from '../src/services/queues/bull.js';
import { BullSchedule } from '../src/services/queues/periodic.js';
import { TimerSchedule, type PeriodicSchedule } from '../src/services/shared/periodic.js';
import { REDIS_URL, eventually } from './helpers/harness.js';
import { capture } from './helpers/log-capture.js';
import { needs } from './helpers/requirements.js';

const logger = pino({ level: 'silent' });

/**
 * How many periods `runs` (times of the runs) span at most: one per period from the first,
 * plus one for a first run that came late (the next is on time, closer to it than a period).
 */
function periodsSpanned(runs: number[], everyMs: number): number {
  const first = runs[0] ?? 0;
  const last = runs.at(-1) ?? 0;
  return Math.floor((last - first) / everyMs) + 2;
}

describe('TimerSchedule (in process)', () => {
  afterEach(() => vi.useRealTimers());

  it('runs each task at start and once every period; a slow run is joined, not doubled; close waits for it', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { logger: log, lines } = capture();
    const schedule = new TimerSchedule(log);
    let runs = 0;
    let release: (() => void) | undefined;
    schedule.add({
      name: 'slow',
      everyMs: 1000,
      run: () => {
        runs++;
        return new Promise<void>((r) => (release = r));
      },
    });
    let fails = 0;
    schedule.add({
      name: 'failing',
      everyMs: 5000,
      run: () => Promise.reject(new Error(`failure ${++fails}`)),
    });
    await schedule.start();
    expect([runs, fails]).toEqual([1, 1]);
    // Still running a period later: not started again.
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(1);
    release?.();
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(3000);
    // The second run holds on: three more periods went by without a third.
    expect([runs, fails]).toEqual([2, 2]);
    expect(lines.filter((l) => l.msg === 'periodic task failed')).toHaveLength(2);

    let closed = false;
    const closing = schedule.close().then(() => (closed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(closed).toBe(false);
    release?.();
    await closing;
    await vi.advanceTimersByTimeAsync(60_000);
    expect([runs, fails]).toEqual([2, 2]);
  });
});

describe('BullSchedule (Redis)', needs('redis'), () => {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const o of opened.splice(0).reverse()) await o.close();
  });

  /** One instance: its own connection, the shared prefix, its schedule of `task`. */
  async function instance(namespace: string, onRun: (at: number) => void, everyMs: number) {
    const bull = await openBull({ url: REDIS_URL, namespace, logger });
    opened.push(bull);
    const schedule: PeriodicSchedule = new BullSchedule(bull, logger);
    schedule.add({ name: 'tick', everyMs, run: async () => onRun(Date.now()) });
    opened.push(schedule);
    return schedule;
  }

  it('two instances on one Redis run a task once per period, not once each', async () => {
    const namespace = `per${randomBytes(4).toString('hex')}`;
    const EVERY = 300;
    const runs: number[] = [];
    const a = await instance(namespace, (at) => runs.push(at), EVERY);
    const b = await instance(namespace, (at) => runs.push(at), EVERY);
    await Promise.all([a.start(), b.start()]);
    await eventually(() => runs.length >= 6, 10_000, 'six runs');
    // Each instance on its own timer would have made six runs in three periods.
    expect(runs.length).toBeLessThanOrEqual(periodsSpanned(runs, EVERY));
    expect(runs[5]! - runs[0]!).toBeGreaterThanOrEqual(4 * EVERY);
    // Past runs leave nothing behind in Redis (a run every 5 minutes, for months).
    const bull = await openBull({ url: REDIS_URL, namespace, logger });
    const queue = new Queue('periodic', { connection: bull.connection, prefix: bull.prefix });
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 0, failed: 0 });
    await queue.close();
    await bull.close();

    // One instance gone (closed while the other runs on): the task is not lost.
    await a.close();
    const seen = runs.length;
    await eventually(() => runs.length >= seen + 2, 10_000, 'runs on the remaining instance');
  });

  it('an instance joining later keeps the schedule (no run of its own at start)', async () => {
    const namespace = `per${randomBytes(4).toString('hex')}`;
    const EVERY = 2000;
    const runs: number[] = [];
    const a = await instance(namespace, (at) => runs.push(at), EVERY);
    await a.start();
    await eventually(() => runs.length === 1, 5_000, 'the first run');
    const b = await instance(namespace, (at) => runs.push(at), EVERY);
    await b.start();
    await eventually(() => runs.length === 2, 10_000, 'the second period');
    // The second run is the next period's, not the joining instance's start.
    expect(runs[1]! - runs[0]!).toBeGreaterThanOrEqual(EVERY / 2);
  });
});
