/**
 * The interactions of this process still owed their first answer (a reply, a deferral).
 *
 * Work that can wait for them does: a job's service call and what follows its reply (the
 * message id recorded, the thread, the submission and its first edits). In a burst of
 * commands every answer then goes out before the first jobs' follow-up work competes with
 * the rest for the event loop and the store; Discord's 3 s deadline is on the answer, and a
 * submission a few tens of milliseconds later changes nothing for the member. Only the
 * interactions that arrived before the wait began count (a steady stream of new commands
 * holds no one), and the wait is bounded (a command slow to answer holds no one for long).
 */
export class FirstAnswers {
  #next = 0;
  /** Owed answers by arrival number; a Set iterates in insertion order, so its first is the oldest. */
  readonly #owed = new Set<number>();
  /** Waits by the last arrival each waits for, in the order they began (so in that order too). */
  readonly #waits: { upTo: number; wake: () => void }[] = [];

  /** An interaction arrived. The function returned marks it answered or dropped (once; later calls do nothing). */
  owe(): () => void {
    const n = this.#next++;
    this.#owed.add(n);
    return () => {
      if (!this.#owed.delete(n)) return;
      const [oldest] = this.#owed;
      // Every wait whose arrivals are all answered now ends, oldest first.
      while (this.#waits.length > 0 && (oldest === undefined || (this.#waits[0]?.upTo ?? 0) < oldest)) {
        this.#waits.shift()?.wake();
      }
    };
  }

  /** How many are owed now. */
  get owed(): number {
    return this.#owed.size;
  }

  /** Resolves once every interaction that arrived before this call has its first answer, or after `maxWaitMs`. */
  settled(maxWaitMs: number): Promise<void> {
    if (this.#owed.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wait = {
        upTo: this.#next - 1,
        wake: (): void => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        const at = this.#waits.indexOf(wait);
        if (at >= 0) this.#waits.splice(at, 1);
        resolve();
      }, maxWaitMs);
      this.#waits.push(wait);
    });
  }
}
