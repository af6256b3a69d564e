/**
 * The one way a suite skips for want of something on the machine (a Redis at REDIS_URL, the
 * redis-server binary, Chromium, nginx):
 *
 *   describe('two instances sharing Redis', needs('redis'), () => { ... });
 *
 * test/global-setup.ts probes once per run (test/helpers/detect.ts) and provides the result to
 * every worker. A suite skipped this way carries its reason in its meta; the skip reporter
 * (test/helpers/skip-reporter.ts) prints one line per skipped suite with it. With CI=true
 * nothing may be missing: the global setup refuses to start, the reporter fails any skip.
 */
import { inject, type TestOptions } from 'vitest';
import type { Capabilities, Capability } from './detect.js';

export type { Capabilities, Capability } from './detect.js';

declare module 'vitest' {
  interface TaskMeta {
    /** Why the suite or test was skipped: what the skip reporter prints. */
    skipReason?: string;
  }
}

/** What the global setup found. */
export function capabilities(): Capabilities {
  const caps = inject('capabilities');
  if (caps === undefined)
    throw new Error('no capabilities provided: run vitest with vitest.config.ts (globalSetup)');
  return caps;
}

/** Options for describe/it: skipped, with the reason, unless every capability named is there. */
export function needs(...wanted: Capability[]): TestOptions {
  return skipOptions(capabilities(), wanted);
}

/** needs() against given capabilities. */
export function skipOptions(caps: Capabilities, wanted: Capability[]): TestOptions {
  const reasons = wanted.flatMap((c) => {
    const d = caps[c];
    return d.ok ? [] : [d.reason];
  });
  return reasons.length === 0 ? {} : { skip: true, meta: { skipReason: reasons.join('; ') } };
}

/** Where a capability was found: a binary's path (inside a suite declared with needs(cap)). */
export function foundAt(cap: Capability): string {
  const d = capabilities()[cap];
  if (!d.ok) throw new Error(d.reason);
  return d.at;
}
