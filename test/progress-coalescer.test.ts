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

  it('cover: an edit queued for later shows every change before it, so none is queued for them', async () => {
    const { queued, c } = make();
    c.changed('a');
    // The worker put the message's edit back for 2 s (its budget was spent).
    c.cover('a', Date.now() + 2000);
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(150);
      c.changed('a');
    }
    await vi.advanceTimersByTimeAsync(1000);
    expect(queued).toEqual(['a']);
    // Once it ran, a change is queued again at once.
    c.changed('a');
    expect(queued).toEqual(['a', 'a']);
  });

  it('space: no edit can go before the time given, so its changes become one edit then', async () => {
    const { queued, c } = make();
    c.changed('a');
    // The worker sent it; the next progress edit may go in 1.2 s.
    c.space('a', Date.now() + 1200);
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(100);
      c.changed('a');
    }
    expect(queued).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(200);
    expect(queued).toEqual(['a', 'a']);
    // Quiet afterwards: nothing more.
    await vi.advanceTimersByTimeAsync(2000);
    expect(queued).toEqual(['a', 'a']);
  });

  it('space keeps a change still waiting for its edit; a time already past holds nothing', async () => {
    const { queued, c } = make();
    c.changed('a');
    c.changed('a'); // waits for the window's end
    c.space('a', Date.now() + 800);
    await vi.advanceTimersByTimeAsync(799);
    expect(queued).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1);
    expect(queued).toEqual(['a', 'a']);
    c.space('b', Date.now() - 1);
    c.changed('b');
    expect(queued).toEqual(['a', 'a', 'b']);
  });

  it('a final flushes a cover too, and its timer', async () => {
    const { queued, c } = make();
    c.cover('a', Date.now() + 5000);
    c.changed('a');
    c.flush('a');
    expect(c.size).toBe(0);
    await vi.advanceTimersByTimeAsync(6000);
    expect(queued).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
