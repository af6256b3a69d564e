import { describe, expect, it } from 'vitest';
import { SingleFlight } from '../src/services/shared/single-flight.js';

describe('SingleFlight', () => {
  it('shares a key’s call while it is under way, then starts anew; forget starts anew at once', async () => {
    const flights = new SingleFlight<number>();
    let calls = 0;
    const release: (() => void)[] = [];
    const call = () =>
      new Promise<number>((resolve) => {
        const n = ++calls;
        release.push(() => resolve(n));
      });
    const a = flights.run('k', call);
    const b = flights.run('k', call);
    const other = flights.run('other', call);
    expect(b).toBe(a);
    expect(calls).toBe(2);
    flights.forget('k');
    const c = flights.run('k', call);
    expect(c).not.toBe(a);
    expect(calls).toBe(3);
    for (const r of release) r();
    expect([await a, await b, await other, await c]).toEqual([1, 1, 2, 3]);
    // The forgotten call ending does not drop the newer one; once both are done a new call starts.
    expect(flights.run('k', call)).not.toBe(c);
    expect(calls).toBe(4);
  });

  it('a failed call is shared as it fails, and the next asker calls again', async () => {
    const flights = new SingleFlight<number>();
    let calls = 0;
    const failing = () => {
      calls++;
      return Promise.reject(new Error('store down'));
    };
    const a = flights.run('k', failing);
    const b = flights.run('k', failing);
    await expect(a).rejects.toThrow('store down');
    await expect(b).rejects.toThrow('store down');
    await expect(flights.run('k', failing)).rejects.toThrow('store down');
    expect(calls).toBe(2);
  });
});
