import PQueue from 'p-queue';

/** How a finished request speaks about the service's load. */
export type Load = 'ok' | 'overloaded' | 'unknown';

export interface SubmitLimitOptions {
  /** Concurrent submissions at start (default 8). */
  initial?: number;
  /** Floor of the halving (default 1). */
  min?: number;
  /** Ceiling of the growth (default 2 × initial). */
  max?: number;
  /** Successes in a row that add one slot (default 20). */
  growAfter?: number;
  /** Told every new value (a metric gauge). */
  onChange?: (concurrency: number) => void;
}

/**
 * One adaptive concurrency limit for submissions to the service (AIMD): a 429 or 503 halves
 * it (never below `min`), `growAfter` answers in a row without one add a slot back (never
 * above `max`). The queue is p-queue, whose `concurrency` can change while tasks wait and
 * run: a shrink holds new starts until the running ones drop below it, a growth starts the
 * waiting ones at once.
 *
 * A burst of 429s from requests that were all started under one limit halves it once: only
 * a request started since the last halving can halve it again.
 */
export class SubmitLimit {
  private readonly queue: PQueue;
  private readonly min: number;
  private readonly max: number;
  private readonly growAfter: number;
  private readonly onChange: ((concurrency: number) => void) | undefined;
  private successes = 0;
  /** Bumped by each halving; a request remembers the one it started under. */
  private generation = 0;

  constructor(opts: SubmitLimitOptions = {}) {
    const initial = opts.initial ?? 8;
    this.min = Math.max(1, opts.min ?? 1);
    this.max = Math.max(initial, opts.max ?? initial * 2);
    this.growAfter = Math.max(1, opts.growAfter ?? 20);
    this.onChange = opts.onChange;
    this.queue = new PQueue({ concurrency: Math.min(this.max, Math.max(this.min, initial)) });
    this.onChange?.(this.queue.concurrency);
  }

  get concurrency(): number {
    return this.queue.concurrency;
  }

  /** Submissions running now / waiting for a slot. */
  get running(): number {
    return this.queue.pending;
  }
  get waiting(): number {
    return this.queue.size;
  }

  /**
   * Runs `task` within the limit; `judge` says what its outcome tells of the service's load
   * (`unknown`: nothing, e.g. a timeout).
   */
  async run<T>(task: () => Promise<T>, judge: (outcome: Settled<T>) => Load): Promise<T> {
    return this.queue.add(async () => {
      const generation = this.generation;
      let outcome: Settled<T>;
      try {
        outcome = { ok: true, value: await task() };
      } catch (error) {
        outcome = { ok: false, error };
      }
      this.feedback(judge(outcome), generation);
      if (outcome.ok) return outcome.value;
      throw outcome.error;
    });
  }

  private feedback(load: Load, startedUnder: number): void {
    if (load === 'overloaded') {
      this.successes = 0;
      if (startedUnder !== this.generation) return;
      this.generation++;
      this.set(Math.max(this.min, Math.floor(this.queue.concurrency / 2)));
    } else if (load === 'ok') {
      this.successes++;
      if (this.successes >= this.growAfter) {
        this.successes = 0;
        this.set(Math.min(this.max, this.queue.concurrency + 1));
      }
    }
  }

  private set(concurrency: number): void {
    if (concurrency === this.queue.concurrency) return;
    this.queue.concurrency = concurrency;
    this.onChange?.(concurrency);
  }
}

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
