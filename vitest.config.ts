import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration suites start servers on ephemeral ports; files run in parallel forks.
    pool: 'forks',
    // Detects Redis, redis-server, Chromium and nginx once; suites skip through needs() (test/helpers/requirements.ts).
    globalSetup: ['test/global-setup.ts'],
    // Compile-time tests (*.test-d.ts): tsc checks them as part of `npm test`; a type error fails the run.
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    // A command-line --reporter replaces these: .ci/run names the skip reporter again.
    reporters: ['default', './test/helpers/skip-reporter.ts'],
  },
});
