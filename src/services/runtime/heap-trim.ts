import { getHeapStatistics } from 'node:v8';
import type { Logger } from 'pino';

/**
 * Gives back to the OS the heap pages V8 keeps after a peak (README "Memory and V8 flags").
 *
 * From V8 12 (Node 22 and 24), the pages a GC empties go to a pool of committed pages
 * and stay resident until a memory-reducing GC, which V8's memory reducer starts only
 * when the process looks idle: a bot polling its jobs never does. Restart recovery of
 * 10 000 jobs peaks ~16 MiB above what the bot then uses, and on Node 24 that much
 * stayed in its RSS for good (V8 11, Node 20, gave such pages back by itself).
 *
 * So every `checkEveryMs` this reads the committed heap; once its highest value over the
 * last `windowMs` is `minFreedBytes` below the peak since the last trim, pages of that
 * peak have lain unused in the pool for the whole window, and a memory-reducing GC
 * (`gc({ flavor: 'last-resort' })`, exposed by `--expose-gc`) releases them. The usual
 * sawtooth of a busy heap reuses its pooled pages within the window, so it does not
 * trigger one; `minIntervalMs` bounds how often the pause (a few full GCs) can come.
 */

/** V8's `gc` extension (`--expose-gc`), as much of it as the trim uses. */
export type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

export interface HeapTrimOptions {
  checkEveryMs: number;
  windowMs: number;
  minFreedBytes: number;
  minIntervalMs: number;
}

export const DEFAULT_HEAP_TRIM_OPTIONS: Readonly<HeapTrimOptions> = {
  checkEveryMs: 5000,
  windowMs: 20_000,
  minFreedBytes: 8 * 1024 * 1024,
  minIntervalMs: 5 * 60_000,
};

export interface HeapTrim {
  /** Starts the periodic check (no-op when the trim is off). */
  start(): void;
  stop(): void;
  /** One check, as the timer runs it; true when it trimmed. */
  check(): boolean;
  /** A memory-reducing GC now (after a known peak, e.g. restart recovery); false when off. */
  trim(reason: string): boolean;
  readonly enabled: boolean;
}

/** V8 majors that keep emptied pages committed until a memory-reducing GC (measured: 11 does not, 12 and 13 do). */
export function v8PoolsFreedPages(v8Version: string = process.versions.v8): boolean {
  return Number(v8Version.split('.')[0]) >= 12;
}

/** The `gc` function when the process runs with `--expose-gc`, else undefined. */
export function exposedGc(global: object = globalThis): GcFunction | undefined {
  const gc: unknown = Reflect.get(global, 'gc');
  return typeof gc === 'function' ? (gc as GcFunction) : undefined;
}

export function createHeapTrim(deps: {
  logger: Logger;
  /** Off when undefined (no `--expose-gc`) or when the runtime gives freed pages back itself. */
  gc: GcFunction | undefined;
  pools?: boolean;
  /** Committed heap in bytes (default: V8's total_heap_size). */
  committed?: () => number;
  now?: () => number;
  options?: Partial<HeapTrimOptions>;
}): HeapTrim {
  const opts = { ...DEFAULT_HEAP_TRIM_OPTIONS, ...deps.options };
  const committed = deps.committed ?? (() => getHeapStatistics().total_heap_size);
  const now = deps.now ?? Date.now;
  const gc = deps.gc;
  const enabled = gc !== undefined && (deps.pools ?? v8PoolsFreedPages());
  /** Samples of the last window, oldest first. */
  const samples: { at: number; bytes: number }[] = [];
  let peak = 0;
  let lastTrimAt = -Infinity;
  let startedAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const check = (): boolean => {
    if (!enabled) return false;
    const t = now();
    const bytes = committed();
    samples.push({ at: t, bytes });
    while (samples.length > 0 && (samples[0]?.at ?? t) < t - opts.windowMs) samples.shift();
    peak = Math.max(peak, bytes);
    // A full window of samples is needed: right after a peak its pages may still be reused.
    const windowFull = t - Math.max(startedAt, lastTrimAt) >= opts.windowMs;
    const recentMax = Math.max(...samples.map((s) => s.bytes));
    if (!windowFull || peak - recentMax < opts.minFreedBytes || t - lastTrimAt < opts.minIntervalMs)
      return false;
    return trim('pages of an earlier peak unused', bytes);
  };

  const trim = (reason: string, before = committed()): boolean => {
    if (!enabled || !gc) return false;
    const started = performance.now();
    try {
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    } catch (err) {
      deps.logger.warn({ err }, 'memory-reducing GC failed');
    }
    const pauseMs = Math.round((performance.now() - started) * 10) / 10;
    lastTrimAt = now();
    const after = committed();
    deps.logger.info(
      { reason, peakMiB: mib(Math.max(peak, before)), beforeMiB: mib(before), afterMiB: mib(after), pauseMs },
      'returned pooled heap pages to the OS',
    );
    peak = after;
    samples.length = 0;
    return true;
  };

  return {
    enabled,
    start() {
      if (!enabled || timer) return;
      startedAt = now();
      timer = setInterval(check, opts.checkEveryMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
    check,
    trim: (reason) => trim(reason),
  };
}

const mib = (bytes: number) => Math.round(bytes / 104857.6) / 10;
