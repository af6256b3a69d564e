/**
 * One call per key at a time: whoever asks for a key while its call is under way shares that
 * call's promise (a burst asking for one record reads it once). `forget` makes the next asker
 * start a call of its own: a write just made may have come after the one under way read.
 */
export class SingleFlight<T> {
  readonly #underWay = new Map<string, Promise<T>>();

  run(key: string, call: () => Promise<T>): Promise<T> {
    const shared = this.#underWay.get(key);
    if (shared) return shared;
    const started: Promise<T> = call().finally(() => {
      if (this.#underWay.get(key) === started) this.#underWay.delete(key);
    });
    this.#underWay.set(key, started);
    return started;
  }

  forget(key: string): void {
    this.#underWay.delete(key);
  }
}
