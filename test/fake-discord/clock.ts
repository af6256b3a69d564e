/**
 * Controllable "now" for Discord-side time rules (interaction token lifetime, 3 s
 * acknowledgement deadline, 1 h old-message edit rule, CDN link expiry, snowflake
 * timestamps). Rate-limit windows deliberately use the real clock, because
 * @discordjs/rest sleeps in real time.
 */
export interface FakeClock {
  now(): number;
}

export class OffsetClock implements FakeClock {
  #offset: number;
  readonly #base: FakeClock;

  constructor(base: FakeClock = { now: () => Date.now() }, startAt?: number) {
    this.#base = base;
    this.#offset = startAt === undefined ? 0 : startAt - base.now();
  }

  now(): number {
    return this.#base.now() + this.#offset;
  }

  advance(ms: number): void {
    this.#offset += ms;
  }

  set(epochMs: number): void {
    this.#offset = epochMs - this.#base.now();
  }
}
