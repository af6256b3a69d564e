import { KeyedMutex } from '../../src/services/store/mutex.js';
import type { AtomicKeyValueStore, KvClaim, KvDecision } from '../../src/services/store/types.js';

/**
 * The store's KV space in memory (JSON round trip, TTL on read, `update` and `claim` under
 * the keys' in-process mutexes, as the SQLite store), for unit tests and benches. Its clock
 * is the test's: a TTL ends when the test's `now` passes it.
 */
export class MemoryKv implements AtomicKeyValueStore {
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
  claim(key: string, value: unknown, ttlMs: number): Promise<KvClaim> {
    return this.update([key], ([held]): KvDecision<KvClaim> =>
      held === undefined
        ? { result: { won: true }, writes: [{ key, value, ttlMs }] }
        : { result: { won: false, holder: held } },
    );
  }
  /** One process, so the keys' mutexes make the read-decide-write atomic (as the SQLite store). */
  update<T>(
    keys: readonly string[],
    decide: (values: readonly unknown[]) => Promise<KvDecision<T>> | KvDecision<T>,
  ): Promise<T> {
    const sorted = [...new Set(keys)];
    const hold = (i: number): Promise<T> => {
      const key = sorted[i];
      if (key === undefined)
        return (async () => {
          const values = await Promise.all(keys.map((k) => this.get(k)));
          const d = await decide(values);
          for (const w of d.writes ?? [])
            await ('delete' in w ? this.delete(w.key) : this.set(w.key, w.value, w.ttlMs));
          return d.result;
        })();
      return this.locks.run(
        `kv:${key}`,
        () => hold(i + 1),
        5000,
        () => new Error(`key ${key} busy`),
      );
    };
    return hold(0);
  }
}
