export const DISCORD_EPOCH = 1_420_070_400_000n;

/** Discord-style snowflake generator (timestamp from the fake clock, monotonic increment). */
export class SnowflakeGenerator {
  #increment = 0n;
  #last = 0n;
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  next(): string {
    let ts = BigInt(Math.floor(this.#now())) - DISCORD_EPOCH;
    if (ts < this.#last) ts = this.#last; // keep ids increasing if the clock is moved back
    if (ts !== this.#last) {
      this.#last = ts;
      this.#increment = 0n;
    }
    const id = (ts << 22n) | (1n << 17n) | (1n << 12n) | (this.#increment & 0xfffn);
    this.#increment += 1n;
    if (this.#increment > 0xfffn) {
      this.#last += 1n;
      this.#increment = 0n;
    }
    return id.toString();
  }
}

export function snowflakeTimestamp(id: string): number {
  return Number((BigInt(id) >> 22n) + DISCORD_EPOCH);
}
