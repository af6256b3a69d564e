/** Setup file of the fast lane: after every file, what it may have left for the next (see shared-state.ts). */
import { afterAll } from 'vitest';
import { resetSharedState } from './shared-state.js';

afterAll(resetSharedState);
