/** Setup file of the fast lane, run before every file (see shared-state.ts). */
import { afterAll, vi } from 'vitest';
import { startUndiciClock } from './shared-state.js';

startUndiciClock();
// A file that left fake timers on would stop every timer of the next.
afterAll(() => vi.useRealTimers());
