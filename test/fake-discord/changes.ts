interface Waiter {
  check: () => void;
  /** The fake is closing: the wait rejects. */
  close: () => void;
}

/**
 * The fake's change feed: every state change (request answered, message stored, gateway
 * event, clock moved) calls `changed()`, which re-checks pending `waitFor`s and tells
 * `onChange` listeners (the playground).
 */
export class ChangeFeed {
  readonly #waiters = new Set<Waiter>();
  readonly #listeners = new Set<() => void>();

  changed(): void {
    for (const w of [...this.#waiters]) w.check();
    for (const l of this.#listeners) l();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the first truthy value of `check()`, re-evaluated on every state change and every 20 ms. */
  waitFor<T>(
    check: () => T | undefined | null | false,
    options: { timeoutMs?: number; description?: string } = {},
  ): Promise<T> {
    const timeoutMs = options.timeoutMs ?? 10_000;
    return new Promise<T>((resolve, reject) => {
      const first = check();
      if (first !== undefined && first !== null && first !== false) {
        resolve(first);
        return;
      }
      const waiter: Waiter = {
        check: () => {
          const value = check();
          if (value !== undefined && value !== null && value !== false) {
            cleanup();
            resolve(value);
          }
        },
        close: () => {
          cleanup();
          reject(new Error(`fake-discord closed while waiting for ${options.description ?? 'a condition'}`));
        },
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `fake-discord: timed out after ${timeoutMs} ms waiting for ${options.description ?? 'a condition'}`,
          ),
        );
      }, timeoutMs);
      // State changes of the fake re-check immediately; polling covers conditions outside the fake (client state).
      const poll = setInterval(() => waiter.check(), 20);
      const cleanup = (): void => {
        clearTimeout(timer);
        clearInterval(poll);
        this.#waiters.delete(waiter);
      };
      this.#waiters.add(waiter);
    });
  }

  /**
   * Rejects pending waits (the fake is closing). Each wait is its own entry, not a listener on
   * an EventEmitter: a storm bench waits on 100 finals at once (Node warned past 10 listeners).
   */
  close(): void {
    for (const w of [...this.#waiters]) w.close();
    this.#waiters.clear();
  }
}
