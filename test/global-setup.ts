/**
 * Runs once before any test file: detects what the machine offers (test/helpers/requirements.ts)
 * and hands it to every worker, and bundles the bot when stale (scripts/bundle.mjs). With CI=true a missing capability stops the run here, one line
 * each: CI installs all of them (.ci/run), so a missing one is a broken CI, not a reason to skip.
 */
import type { TestProject } from 'vitest/node';
import { bundleBot } from '../scripts/bundle.mjs';
import { detectCapabilities, missingLines } from './helpers/detect.js';

export default async function setup(project: TestProject): Promise<void> {
  const caps = await detectCapabilities();
  const missing = missingLines(caps);
  if (process.env.CI === 'true' && missing.length > 0) {
    const refusal = new Error(`CI=true runs every suite, but:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
    refusal.stack = refusal.message; // the lines say it all; a stack into vitest would only bury them
    throw refusal;
  }
  project.provide('capabilities', caps);
  // The suites that start the bot as a process run what `npm start` runs: the bundle, built
  // here once when a source changed (one build at a time, whichever lane asks first).
  await bundleBot({ ifStale: true });
}
