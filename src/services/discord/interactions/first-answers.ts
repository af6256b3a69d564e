/**
 * The interactions of this process still owed their first answer (a reply, a deferral).
 *
 * Work that can wait for them does: a job's service call and what follows its reply (the
 * message id recorded, the thread, the submission and its first edits). In a burst of
 * commands every answer then goes out before the first jobs' follow-up work competes with
 * the rest for the event loop and the store; Discord's 3 s deadline is on the answer, and a
 * submission a few tens of milliseconds later changes nothing for the member. The wait is
 * bounded, so a command that is slow to answer (a slow store) holds no one for long.
 */
export class FirstAnswers {
  #owed = 0;
  readonly #waiters = new Set<() => void>();

  /** An interaction arrived. The function returned marks it answered or dropped (once; later calls do nothing). */
  owe(): () => void {
    this.#owed++;
    let paid = false;
    return () => {
      if (paid) return;
      paid = true;
      this.#owed--;
      if (this.#owed === 0) for (const wake of [...this.#waiters]) wake();
    };
  }

  /** How many are owed now. */
  get owed(): number {
    return this.#owed;
  }

  /** Resolves once no interaction is owed its first answer, or after `maxWaitMs`. */
  settled(maxWaitMs: number): Promise<void> {
    if (this.#owed === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, maxWaitMs);
      this.#waiters.add(wake);
    });
  }
}
