/**
 * A process-wide memory budget for downloaded files held in memory (e.g. gallery files
 * waiting for their upload): a weighted semaphore counted in bytes. A reader reserves
 * before it reads (the declared size, or its cap when none is declared), shrinks the
 * reservation to the real size once read, and releases it when the bytes are gone.
 * Waiters are served strictly first come, first served: a large reservation is never
 * starved by smaller ones arriving after it. A waiter that times out or is aborted
 * leaves the queue at once (so it holds no one up).
 *
 * Why not a library: the weighted semaphores on npm either do not weigh (async-sema,
 * p-limit) or, like async-mutex's Semaphore, walk every unit of the free weight on
 * each release (millions of steps when the unit is a byte) and keep a timed-out
 * waiter queued until it would have been served.
 */

export const DEFAULT_BUFFER_BUDGET_BYTES = 64 * 1024 * 1024;

export type ByteBudgetErrorKind = 'too_large' | 'timeout' | 'aborted';

export class ByteBudgetError extends Error {
  constructor(
    readonly kind: ByteBudgetErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'ByteBudgetError';
  }
}

/** Bytes held against the budget until released. */
export interface Reservation {
  /** Bytes currently held. */
  readonly bytes: number;
  /** Gives back what is above `bytes` (never grows); e.g. the cap reserved, the real size read. */
  shrink(bytes: number): void;
  /** Gives everything back; idempotent. */
  release(): void;
}

export interface ReserveOptions {
  /** Longest wait for room (default: the budget's `defaultWaitMs`). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

interface Waiter {
  bytes: number;
  grant: () => void;
}

export class ByteBudget {
  #available: number;
  readonly #queue: Waiter[] = [];

  constructor(
    /** Total bytes that may be held at once. */
    readonly capacity: number = DEFAULT_BUFFER_BUDGET_BYTES,
    private readonly defaultWaitMs = 60_000,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0) {
      throw new RangeError('a byte budget needs a positive whole number of bytes');
    }
    this.#available = capacity;
  }

  /** Bytes free right now. */
  get available(): number {
    return this.#available;
  }

  /** Reservations waiting for room. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Holds `bytes` of the budget, waiting (in arrival order) while it is full. Refused at
   * once (kind `too_large`) when `bytes` exceeds the whole capacity: such a file can never
   * be held and must be streamed or linked instead.
   */
  reserve(bytes: number, opts: ReserveOptions = {}): Promise<Reservation> {
    const want = Math.max(0, Math.ceil(bytes));
    if (want > this.capacity) {
      return Promise.reject(
        new ByteBudgetError(
          'too_large',
          `needs ${want} bytes, more than the whole budget (${this.capacity})`,
        ),
      );
    }
    if (opts.signal?.aborted) {
      return Promise.reject(new ByteBudgetError('aborted', 'cancelled while waiting for memory'));
    }
    if (this.#queue.length === 0 && want <= this.#available) {
      this.#available -= want;
      return Promise.resolve(this.#reservation(want));
    }
    return new Promise<Reservation>((resolve, reject) => {
      const leave = (err: ByteBudgetError): void => {
        const i = this.#queue.indexOf(waiter);
        if (i === -1) return;
        this.#queue.splice(i, 1);
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        reject(err);
        // The head may have been what blocked the ones behind it.
        this.#dispatch();
      };
      const onAbort = (): void => leave(new ByteBudgetError('aborted', 'cancelled while waiting for memory'));
      const waitMs = opts.timeoutMs ?? this.defaultWaitMs;
      const timer = setTimeout(
        () => leave(new ByteBudgetError('timeout', `no memory free for ${Math.ceil(waitMs / 1000)} s`)),
        waitMs,
      );
      const waiter: Waiter = {
        bytes: want,
        grant: () => {
          clearTimeout(timer);
          opts.signal?.removeEventListener('abort', onAbort);
          resolve(this.#reservation(want));
        },
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }

  /** Serves waiters from the head while the head fits. */
  #dispatch(): void {
    for (let head = this.#queue[0]; head && head.bytes <= this.#available; head = this.#queue[0]) {
      this.#queue.shift();
      this.#available -= head.bytes;
      head.grant();
    }
  }

  #giveBack(bytes: number): void {
    if (bytes <= 0) return;
    this.#available += bytes;
    this.#dispatch();
  }

  #reservation(initial: number): Reservation {
    let held = initial;
    return {
      get bytes() {
        return held;
      },
      shrink: (bytes: number) => {
        const keep = Math.max(0, Math.ceil(bytes));
        if (keep >= held) return;
        const freed = held - keep;
        held = keep;
        this.#giveBack(freed);
      },
      release: () => {
        const freed = held;
        held = 0;
        this.#giveBack(freed);
      },
    };
  }
}

/** A downloaded body (as SafeResponse gives it), for `bufferWithinBudget`. */
export interface BodySource {
  contentLength?: number;
  body: AsyncIterable<Uint8Array>;
  abort(): void;
}

export interface BufferedBody {
  data: Buffer;
  /** Gives the bytes' share of the budget back: call once `data` is no longer needed. */
  release(): void;
}

/**
 * Reads a body into memory within the budget: reserves its declared length (or `maxBytes`
 * when none is declared, at most the whole budget), reads, shrinks the reservation to the
 * real size. On any failure the reservation is released and the transfer stopped. A body
 * longer than what was reserved fails with ByteBudgetError `too_large`.
 */
export async function bufferWithinBudget(
  source: BodySource,
  budget: ByteBudget,
  opts: { maxBytes: number } & ReserveOptions,
): Promise<BufferedBody> {
  let reservation: Reservation;
  try {
    const { maxBytes, ...wait } = opts;
    reservation = await budget.reserve(Math.min(source.contentLength ?? maxBytes, budget.capacity), wait);
  } catch (err) {
    source.abort();
    throw err;
  }
  try {
    // A declared length is read straight into one buffer of that size; otherwise the chunks
    // are joined at the end (for a moment twice the bytes, like every concatenation).
    const whole = source.contentLength !== undefined ? Buffer.allocUnsafe(reservation.bytes) : undefined;
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of source.body) {
      if (size + chunk.byteLength > reservation.bytes) {
        throw new ByteBudgetError(
          'too_large',
          `the file is larger than the ${reservation.bytes} bytes reserved for it`,
        );
      }
      if (whole) whole.set(chunk, size);
      else chunks.push(chunk);
      size += chunk.byteLength;
    }
    reservation.shrink(size);
    const data = whole ? whole.subarray(0, size) : Buffer.concat(chunks, size);
    return { data, release: () => reservation.release() };
  } catch (err) {
    source.abort();
    reservation.release();
    throw err;
  }
}
