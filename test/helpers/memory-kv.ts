import { KeyedMutex } from '../../src/services/store/mutex.js';
import type { LockingKeyValueStore } from '../../src/services/store/types.js';

/** The store's KV space in memory (JSON round trip, TTL on read, in-process lock), for unit tests and benches. */
export class MemoryKv implements LockingKeyValueStore {
  readonly data = new Map<string, { json: string; expiresAt: number }>();
  private readonly locks = new KeyedMutex();
  constructor(private readonly now: () => number = Date.now) {}
  get<T>(key: string): Promise<T | undefined> {
    const e = this.data.get(key);
    if (!e || e.expiresAt <= this.now()) return Promise.resolve(undefined);
    return Promise.resolve(JSON.parse(e.json) as T);
  }
  set(key: string, value: unknown, ttlMs: number): Promise<void> {
    this.data.set(key, { json: JSON.stringify(value), expiresAt: this.now() + ttlMs });
    return Promise.resolve();
  }
  delete(key: string): Promise<void> {
    this.data.delete(key);
    return Promise.resolve();
  }
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(name, fn, 5000, () => new Error(`lock ${name} busy`));
  }
}
