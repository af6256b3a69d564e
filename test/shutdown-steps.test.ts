/**
 * A stop always ends: a shutdown step that hangs is left behind after its limit (named
 * in the log), a failing one is logged, and the steps after both still run.
 * Regression: a test harness's close once waited more than 30 s on one step in CI.
 */
import { pino } from 'pino';
import { capture } from './helpers/log-capture.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { shutdownSteps } from '../src/shutdown-steps.js';
import { InProcessAfterFinal } from '../src/services/jobs/after-final.js';
import { TimerChecks } from '../src/services/jobs/timer-checks.js';

describe('shutdownSteps', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('goes on past a step that never ends, after its limit, and names it', async () => {
    const { logger, lines } = capture();
    const step = shutdownSteps(logger, () => Date.now());
    const ran: string[] = [];
    const stop = (async () => {
      await step('gateway', () => new Promise<void>(() => undefined), 2000);
      ran.push('after');
      await step('store', () => void ran.push('store'));
    })();
    await vi.advanceTimersByTimeAsync(1999);
    expect(ran).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await stop;
    expect(ran).toEqual(['after', 'store']);
    expect(lines).toContainEqual(
      expect.objectContaining({
        step: 'gateway',
        limitMs: 2000,
        msg: expect.stringMatching(/did not finish/),
      }),
    );
    expect(lines.filter((l) => l.step === 'store')).toEqual([]);
  });

  it('logs a failing step (sync throw or rejection) and runs the next', async () => {
    const { logger, lines } = capture();
    const step = shutdownSteps(logger);
    const ran: string[] = [];
    await step('http', () => {
      throw new Error('boom');
    });
    await step('queues', () => Promise.reject(new Error('gone')));
    await step('store', () => void ran.push('store'));
    expect(ran).toEqual(['store']);
    expect(lines.filter((l) => l.msg === 'shutdown step failed').map((l) => l.step)).toEqual([
      'http',
      'queues',
    ]);
  });

  it('a quick step leaves no line and no timer behind', async () => {
    const { logger, lines } = capture();
    const step = shutdownSteps(logger);
    await step('metrics', async () => undefined);
    expect(lines).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('in-process work finishes before close() resolves (nothing writes after the store is closed)', () => {
  const silent = pino({ level: 'silent' });

  it('TimerChecks: a running check', async () => {
    let finish = () => undefined as void;
    let ended = false;
    const checks = new TimerChecks({ logger: silent, retryMs: 1000 });
    checks.start(async () => {
      await new Promise<void>((r) => (finish = () => r()));
      ended = true;
      return undefined;
    });
    await checks.schedule('job-1', 0);
    await new Promise((r) => setTimeout(r, 20));
    let closed = false;
    const closing = checks.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(false);
    finish();
    await closing;
    expect(ended).toBe(true);
  });

  it('InProcessAfterFinal: running after-final work', async () => {
    let finish = () => undefined as void;
    let ended = false;
    const queue = new InProcessAfterFinal({
      work: {
        runFor: async () => {
          await new Promise<void>((r) => (finish = () => r()));
          ended = true;
          return true;
        },
      },
      logger: silent,
    });
    await queue.enqueue('job-1');
    let closed = false;
    const closing = queue.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(false);
    finish();
    await closing;
    expect(ended).toBe(true);
  });
});
