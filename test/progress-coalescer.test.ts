/**
 * Progress edits on BullMQ: one queued at once, the rest of a window folded into one
 * more at its end (the edit renders the stored record, so that one shows the latest
 * state); a final drops the window; messages are independent.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProgressCoalescer } from '../src/services/queues/progress-coalescer.js';

describe('ProgressCoalescer', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const make = () => {
    const queued: string[] = [];
    return { queued, c: new ProgressCoalescer(250, (k) => queued.push(k)) };
  };

  it('queues the first change at once and 50 more of the window as one at its end', async () => {
    const { queued, c } = make();
    c.changed('a');
    expect(queued).toEqual(['a']);
    for (let i = 0; i < 50; i++) {
      await vi.advanceTimersByTimeAsync(4);
      c.changed('a');
    }
    expect(queued).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(250);
    expect(queued).toEqual(['a', 'a']);
    // The trailing edit opened a window of its own: quiet, it ends with nothing more.
    await vi.advanceTimersByTimeAsync(1000);
    expect(queued).toEqual(['a', 'a']);
    expect(c.size).toBe(0);
  });

  it('a lone change is queued once, and again after a quiet window', async () => {
    const { queued, c } = make();
    c.changed('a');
    await vi.advanceTimersByTimeAsync(300);
    expect(queued).toEqual(['a']);
    c.changed('a');
    expect(queued).toEqual(['a', 'a']);
  });

  it('messages do not hold each other back', () => {
    const { queued, c } = make();
    c.changed('a');
    c.changed('b');
    c.changed('a');
    c.changed('c');
    expect(queued).toEqual(['a', 'b', 'c']);
  });

  it('a final flushes the window: no trailing progress edit after it', async () => {
    const { queued, c } = make();
    c.changed('a');
    c.changed('a');
    c.flush('a');
    await vi.advanceTimersByTimeAsync(1000);
    expect(queued).toEqual(['a']);
    // A change after the flush starts afresh.
    c.changed('a');
    expect(queued).toEqual(['a', 'a']);
  });

  it('after close nothing more is queued', async () => {
    const { queued, c } = make();
    c.changed('a');
    c.changed('a');
    c.close();
    await vi.advanceTimersByTimeAsync(1000);
    expect(queued).toEqual(['a']);
    expect(vi.getTimerCount()).toBe(0);
  });
});
