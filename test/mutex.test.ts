import { describe, expect, it } from 'vitest';
import { KeyedMutex } from '../src/services/store/mutex.js';

const busy = () => new Error('busy');
const later = <T>(ms: number, value: T) => new Promise<T>((r) => setTimeout(() => r(value), ms));

describe('KeyedMutex', () => {
  it('runs the holders of one key one at a time, in arrival order', async () => {
    const m = new KeyedMutex();
    const log: string[] = [];
    let inside = 0;
    const work = (name: string, ms: number) =>
      m.run(
        'k',
        async () => {
          inside++;
          expect(inside).toBe(1);
          log.push(`start ${name}`);
          await later(ms, undefined);
          log.push(`end ${name}`);
          inside--;
          return name;
        },
        1000,
        busy,
      );
    const results = await Promise.all([work('a', 20), work('b', 5), work('c', 1)]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    expect(m.busyKeys).toBe(0);
  });

  it('says whether a key is held, from the first holder until the last waiter is done', async () => {
    const m = new KeyedMutex();
    expect(m.isHeld('k')).toBe(false);
    const first = m.run('k', () => later(10, 1), 1000, busy);
    const second = m.run('k', () => later(1, 2), 1000, busy);
    expect(m.isHeld('k')).toBe(true);
    expect(m.isHeld('other')).toBe(false);
    await first;
    expect(m.isHeld('k')).toBe(true);
    await second;
    expect(m.isHeld('k')).toBe(false);
  });

  it('never makes different keys wait for each other', async () => {
    const m = new KeyedMutex();
    const order: string[] = [];
    const slow = m.run('a', () => later(30, 'a').then((v) => (order.push(v), v)), 1000, busy);
    const fast = m.run('b', () => later(1, 'b').then((v) => (order.push(v), v)), 1000, busy);
    await Promise.all([slow, fast]);
    expect(order).toEqual(['b', 'a']);
  });

  it('releases the key when the work rejects or throws before its first await', async () => {
    const m = new KeyedMutex();
    await expect(m.run('k', () => Promise.reject(new Error('boom')), 1000, busy)).rejects.toThrow('boom');
    await expect(
      m.run(
        'k',
        () => {
          throw new Error('sync');
        },
        1000,
        busy,
      ),
    ).rejects.toThrow('sync');
    expect(m.busyKeys).toBe(0);
    await expect(m.run('k', async () => 'free again', 1000, busy)).resolves.toBe('free again');
  });

  it('gives up after maxWaitMs with the onTimeout error, and the queue goes on without it', async () => {
    const m = new KeyedMutex();
    const ran: string[] = [];
    const holder = m.run('k', () => later(60, 'holder'), 1000, busy);
    const impatient = m.run('k', async () => void ran.push('impatient'), 10, busy);
    const patient = m.run('k', async () => (ran.push('patient'), 'patient'), 1000, busy);
    await expect(impatient).rejects.toThrow('busy');
    await expect(holder).resolves.toBe('holder');
    await expect(patient).resolves.toBe('patient');
    expect(ran).toEqual(['patient']);
    expect(m.busyKeys).toBe(0);
  });
});
