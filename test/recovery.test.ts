/**
 * Restart recovery (OpenJobRecovery) with virtual time: every open job's check is due at the
 * same pace as before, but its record is read and its check scheduled a page at a time, shortly
 * before the page is due; the start waits for the first page only; a stop ends it between pages;
 * a failure mid-way starts it again.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { capture } from './helpers/log-capture.js';
import { OpenJobRecovery, recoveryPerSecond } from '../src/services/jobs/recovery.js';
import type { CheckScheduler } from '../src/services/jobs/ports.js';
import type { JobRecord } from '../src/services/store/types.js';

const PAGE = 100;
const logged = (lines: unknown[]) => lines as Record<string, unknown>[];

/** A store of `n` open jobs handing out pages of 100, noting when each page was read. */
function openJobs(n: number, failAtPage?: { page: number; times: number }) {
  const readAt: number[] = [];
  let failures = failAtPage?.times ?? 0;
  const store = {
    async *openPages(): AsyncGenerator<JobRecord[]> {
      for (let p = 0; p * PAGE < n; p++) {
        if (failAtPage && p === failAtPage.page && failures > 0) {
          failures--;
          throw new Error('store unavailable');
        }
        readAt.push(Date.now());
        await Promise.resolve();
        const page: JobRecord[] = [];
        for (let i = p * PAGE; i < Math.min(n, (p + 1) * PAGE); i++)
          page.push({ id: `job-${i}` } as JobRecord);
        yield page;
      }
    },
  };
  return { store, readAt };
}

/** Checks scheduled: job id → absolute due time (the last one set). */
function checks() {
  const due = new Map<string, number>();
  let calls = 0;
  const scheduler: CheckScheduler = {
    async schedule(jobId, delayMs) {
      calls++;
      due.set(jobId, Date.now() + delayMs);
    },
    pending: () => due.size,
    close: async () => undefined,
  };
  return { scheduler, due, calls: () => calls };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(1_000_000);
});
afterEach(() => vi.useRealTimers());

describe('restart recovery', () => {
  it('spreads the checks at its pace and reads each page only shortly before the page is due', async () => {
    const { store, readAt } = openJobs(1000);
    const c = checks();
    const { logger, lines } = capture();
    const recovery = new OpenJobRecovery({ store, checks: c.scheduler, logger, perSecond: 100 });
    const t0 = Date.now();
    await recovery.start();
    // The start waits for the first page only; the second (due in 1 s) follows at once, no more.
    expect(c.due.size).toBeGreaterThanOrEqual(PAGE);
    await vi.advanceTimersByTimeAsync(0);
    expect(readAt).toEqual([t0, t0]);
    expect(c.due.size).toBe(2 * PAGE);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(await recovery.done).toBe(1000);
    // Ten a step of 100 ms: job i is due at floor(i / 10) * 100 ms, as when all were scheduled at once.
    for (let i = 0; i < 1000; i++) expect(c.due.get(`job-${i}`)).toBe(t0 + Math.floor(i / 10) * 100);
    expect(c.calls()).toBe(1000);
    // Page p (due from p s on) was read 1 s before it was due, never all at the start.
    readAt.forEach((at, p) => expect(at).toBe(t0 + Math.max(0, p * 1000 - 1000)));
    expect(logged(lines).some((l) => l.msg === 'recovered open jobs' && l.open === 1000)).toBe(true);
  });

  it('a stop between pages schedules nothing more and ends the recovery', async () => {
    const { store, readAt } = openJobs(1000);
    const c = checks();
    const { logger, lines } = capture();
    const recovery = new OpenJobRecovery({ store, checks: c.scheduler, logger, perSecond: 100 });
    await recovery.start();
    await vi.advanceTimersByTimeAsync(2_500);
    const before = c.calls();
    expect(readAt.length).toBe(4);
    await recovery.stop();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(c.calls()).toBe(before);
    expect(await recovery.done).toBe(before);
    expect(logged(lines).some((l) => l.msg === 'recovered open jobs' && l.stopped === true)).toBe(true);
  });

  it('a failure before the first page fails the start', async () => {
    const { store } = openJobs(300, { page: 0, times: 1 });
    const { logger } = capture();
    const recovery = new OpenJobRecovery({ store, checks: checks().scheduler, logger });
    await expect(recovery.start()).rejects.toThrow('store unavailable');
  });

  it('a failure mid-way is logged and the recovery runs again from the start', async () => {
    const { store } = openJobs(300, { page: 2, times: 1 });
    const c = checks();
    const { logger, lines } = capture();
    const recovery = new OpenJobRecovery({
      store,
      checks: c.scheduler,
      logger,
      perSecond: 100,
      retryMs: 5_000,
    });
    await recovery.start();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(await recovery.done).toBe(300);
    expect(c.due.size).toBe(300);
    expect(logged(lines).some((l) => l.level === 50 && /recovery failed mid-way/.test(String(l.msg)))).toBe(
      true,
    );
  });

  it('takes half of the service read budget (fetch-many batches of 20)', () => {
    expect(recoveryPerSecond(10)).toBe(100);
    expect(recoveryPerSecond(1)).toBe(10);
    expect(recoveryPerSecond(1000)).toBe(10_000);
  });
});
