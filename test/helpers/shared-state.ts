/**
 * What a test file could leave in a library's module state for the next file in its worker (the
 * fast lane shares workers: `isolate: false`); `test/helpers/between-files.ts` runs these around
 * every file of that lane.
 *
 * undici measures its timeouts over 1 s on a coarse clock driven by one timer, made on first use
 * and refreshed ever after. Made while a file faked `setTimeout` (safe-download's timeout tests),
 * that timer would be a fake one: once real timers were back it would never fire, and no later
 * undici timeout in the worker would (media-client's timeout tests failed so). Started on real
 * timers before any file runs, it stays real.
 */
import { createRequire } from 'node:module';

interface UndiciTimers {
  setFastTimeout(callback: () => void, delay: number): unknown;
  clearFastTimeout(timer: unknown): void;
  /** undici's own, for tests: forgets the clock's timer (and every pending one). */
  reset(): void;
}

export const undiciTimers = createRequire(import.meta.url)('undici/lib/util/timers.js') as UndiciTimers;

/** Starts undici's coarse clock on the timers of the moment when it is not running yet (else a no-op). */
export function startUndiciClock(): void {
  undiciTimers.clearFastTimeout(undiciTimers.setFastTimeout(() => undefined, 1001));
}
