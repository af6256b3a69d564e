/**
 * The runtime's parts register what they must close; a stop closes them in reverse order of
 * registration (the last built, which depends on the rest, first), each within its own limit.
 */
import { capture } from './helpers/log-capture.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Disposers } from '../src/runtime/disposers.js';

describe('Disposers', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('closes in reverse order of registration, inline stops included', async () => {
    const { logger } = capture();
    const ran: string[] = [];
    const d = new Disposers();
    d.add({ name: 'store', close: async () => void ran.push('store') });
    d.add({ name: 'reader', close: () => void ran.push('reader'), inline: true });
    d.add({ name: 'gateway', close: async () => void ran.push('gateway') });
    expect(d.order()).toEqual(['gateway', 'reader', 'store']);
    await d.closeAll(logger, { drainMs: 0 });
    expect(ran).toEqual(['gateway', 'reader', 'store']);
  });

  it('gives a step the limit it derives from the stop, then goes on past it', async () => {
    const { logger, lines } = capture();
    const ran: string[] = [];
    const d = new Disposers();
    d.add({ name: 'store', close: () => void ran.push('store') });
    d.add({
      name: 'message edits',
      close: ({ drainMs }) => {
        ran.push(`drain ${drainMs}`);
        return new Promise<void>(() => undefined);
      },
      timeoutMs: ({ drainMs }) => drainMs + 1000,
    });
    const stop = d.closeAll(logger, { drainMs: 3000 });
    await vi.advanceTimersByTimeAsync(3999);
    expect(ran).toEqual(['drain 3000']);
    await vi.advanceTimersByTimeAsync(1);
    await stop;
    expect(ran).toEqual(['drain 3000', 'store']);
    expect(lines).toContainEqual(
      expect.objectContaining({
        step: 'message edits',
        limitMs: 4000,
        msg: expect.stringMatching(/did not finish/),
      }),
    );
  });
});
