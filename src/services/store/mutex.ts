/**
 * A tiny in-process keyed async mutex.
 *
 * Each key has a promise chain: a caller appends its own "turn" promise to the
 * chain's tail, waits for the previous tail, runs, then resolves its turn so
 * the next caller (FIFO) goes. Different keys never wait for each other. The
 * map entry is removed when the last holder of a key finishes, so memory stays
 * proportional to the number of keys currently busy.
 *
 * Waiting is bounded by `maxWaitMs`: a caller that waits longer gives up
 * (the `onTimeout` error is thrown) and its turn is handed straight to the next
 * waiter as soon as it comes, so the chain never stalls.
 *
 * This serialises work inside ONE process only; on Redis the store adds a
 * cross-process lock behind it, or for job records compare-and-set writes
 * (keyv-store.ts).
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>, maxWaitMs: number, onTimeout: () => Error): Promise<T> {
    const busy = this.#tails.get(key);
    if (busy === undefined) {
      // Uncontended (the common case, e.g. every webhook of a storm): no wait, so no timer.
      let releaseTurn: () => void = () => undefined;
      const tail = new Promise<void>((resolve) => {
        releaseTurn = resolve;
      });
      this.#tails.set(key, tail);
      try {
        return await fn();
      } finally {
        releaseTurn();
        if (this.#tails.get(key) === tail) this.#tails.delete(key);
      }
    }
    const previous = busy;
    let releaseTurn: () => void = () => undefined;
    const turn = new Promise<void>((resolve) => {
      releaseTurn = resolve;
    });
    const tail = previous.then(() => turn);
    this.#tails.set(key, tail);
    const release = (): void => {
      releaseTurn();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };

    let timer: NodeJS.Timeout | undefined;
    const acquired = await Promise.race([
      previous.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), maxWaitMs);
      }),
    ]);
    clearTimeout(timer);
    if (!acquired) {
      void previous.then(release);
      throw onTimeout();
    }
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Keys with a holder or waiters (for tests and diagnostics). */
  get busyKeys(): number {
    return this.#tails.size;
  }
}
