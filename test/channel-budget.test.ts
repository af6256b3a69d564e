import { describe, expect, it } from 'vitest';
import { MemoryChannelBudget } from '../src/services/discord/edits/channel-budget.js';

describe('MemoryChannelBudget', () => {
  const budget = () => new MemoryChannelBudget({ limit: 5, windowMs: 5000, finalReserve: 2 });

  it('progress leaves the reserve to finals; finals may take the whole window', () => {
    const b = budget();
    expect([0, 1, 2].map(() => b.acquire('c', 'progress', 0))).toEqual([0, 0, 0]);
    expect(b.acquire('c', 'progress', 0)).toBeGreaterThan(0);
    expect(b.acquire('c', 'final', 0)).toBe(0);
    expect(b.acquire('c', 'final', 0)).toBe(0);
    expect(b.acquire('c', 'final', 0)).toBeGreaterThan(0);
    // Other channels have their own budget.
    expect(b.acquire('d', 'progress', 0)).toBe(0);
  });

  it('counts each slot from the answer, so latency cannot fit a sixth edit into the window', () => {
    const b = budget();
    for (let i = 0; i < 5; i++) expect(b.acquire('c', 'final', 0)).toBe(0);
    // Still in flight: no slot frees by time alone.
    expect(b.acquire('c', 'final', 10_000)).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) b.settled('c', 10_000 + i * 100);
    expect(b.acquire('c', 'final', 14_999)).toBe(1); // the first answer leaves the window at 15 000
    expect(b.acquire('c', 'final', 15_000)).toBe(0);
  });

  it('a rate-limited edit gives its slot back; a 429 blocks the channel (or all on a global one)', () => {
    const b = budget();
    for (let i = 0; i < 5; i++) b.acquire('c', 'final', 0);
    b.released('c', 10);
    b.blocked('c', 500);
    expect(b.acquire('c', 'final', 100)).toBe(400);
    expect(b.acquire('c', 'final', 500)).toBe(0);
    b.blocked(undefined, 900);
    expect(b.acquire('e', 'final', 600)).toBe(300);
  });
});
