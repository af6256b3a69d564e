/**
 * A tiny in-process keyed async mutex.
 *
 * A key in the map is held; its value is the FIFO of callers waiting for it (null
 * while nobody waits). When the holder's work settles, the first waiter runs, or
 * the key is dropped, so memory stays proportional to the keys currently busy.
 * The uncontended acquire (the common case, e.g. every webhook of a storm) costs
 * one map entry: no promise, timer or queue of its own.
 *
 * Waiting is bounded by `maxWaitMs`: a caller that waits longer gives up (the
 * `onTimeout` error is thrown) and leaves the queue, so the chain never stalls.
 *
 * This serialises work inside ONE process only; on Redis the store adds a
 * cross-process lock behind it, or for job records compare-and-set writes
 * (keyv-store.ts).
 */
export class KeyedMutex {
  readonly #held = new Map<string, (() => void)[] | null>();

  run<T>(key: string, fn: () => Promise<T>, maxWaitMs: number, onTimeout: () => Error): Promise<T> {
    if (!this.#held.has(key)) {
      this.#held.set(key, null);
      return this.#hold(key, fn);
    }
    return new Promise<T>((resolve, reject) => {
      const turn = (): void => {
        clearTimeout(timer);
        this.#hold(key, fn).then(resolve, reject);
      };
      let waiters = this.#held.get(key);
      if (!waiters) {
        waiters = [];
        this.#held.set(key, waiters);
      }
      waiters.push(turn);
      const timer = setTimeout(() => {
        const queue = this.#held.get(key);
        const at = queue ? queue.indexOf(turn) : -1;
        if (at < 0) return; // its turn came as the timer fired
        queue?.splice(at, 1);
        reject(onTimeout());
      }, maxWaitMs);
    });
  }

  /** Runs `fn` as the key's holder; the next waiter goes once its work settles. */
  #hold<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let work: Promise<T>;
    try {
      work = fn();
    } catch (err) {
      this.#release(key);
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const release = (): void => this.#release(key);
    work.then(release, release);
    return work;
  }

  #release(key: string): void {
    const next = this.#held.get(key)?.shift();
    if (next) next();
    else this.#held.delete(key);
  }

  /** Is `key` held (or waited for)? Synchronous work on it must then queue behind. */
  isHeld(key: string): boolean {
    return this.#held.has(key);
  }

  /** Keys with a holder or waiters (for tests and diagnostics). */
  get busyKeys(): number {
    return this.#held.size;
  }
}
