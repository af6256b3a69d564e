/**
 * What a test file may leave in a library's module state for the next file in its worker (the
 * fast lane shares workers: `isolate: false`). `test/helpers/between-files.ts` resets it after
 * every file of that lane.
 *
 * - undici measures its timeouts over 1 s on a coarse clock driven by one timer, made on first
 *   use. Made while a file faked `setTimeout` (safe-download's timeout tests), that timer is a
 *   fake one: once real timers are back it never fires, and no later undici timeout in the
 *   worker would. `reset()` is undici's own, kept for tests.
 * - A file that left fake timers on would stop every timer of the next.
 */
import { createRequire } from 'node:module';
import { vi } from 'vitest';

const undiciTimers = createRequire(import.meta.url)('undici/lib/util/timers.js') as { reset(): void };

export function resetSharedState(): void {
  vi.useRealTimers();
  undiciTimers.reset();
}
