import { defineConfig } from 'vitest/config';

/**
 * Suites that run the bot (or Redis, nginx, Chromium) as processes of their own: each one keeps
 * a core busy for a while, so they have a lane of their own (`--project processes`) that CI runs
 * beside the in-process lane (`--project fast`) with its own worker count (.ci/run). And the suite
 * that bounds the event loop's longest stall: in the fast lane's shared workers, the garbage of the
 * files before it is collected in its measurement (it once read 260 ms against its 250).
 */
export const PROCESS_SUITES = [
  'test/cluster-faults.test.ts',
  'test/deploy-lb.test.ts',
  'test/e2e-http-process.test.ts',
  'test/e2e-process.test.ts',
  'test/e2e-redis-outage.test.ts',
  'test/playground.browser.test.ts',
  'test/privacy-export.test.ts',
  'test/replicas.test.ts',
  'test/start-failures.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration suites start servers on ephemeral ports; files run in parallel forks.
    pool: 'forks',
    // Detects Redis, redis-server, Chromium and nginx once; suites skip through needs() (test/helpers/requirements.ts).
    globalSetup: ['test/global-setup.ts'],
    // A command-line --reporter replaces these: .ci/run names the skip reporter again.
    reporters: ['default', './test/helpers/skip-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: PROCESS_SUITES,
          // Files share their worker's module graph: each imports the app once per worker, not once
          // per file (a third of the lane's CPU). What a file could spoil for the next is set up before it.
          isolate: false,
          setupFiles: ['test/helpers/between-files.ts'],
          // Compile-time tests (*.test-d.ts): tsc checks them as part of `npm test`; a type error fails the run.
          typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
        },
      },
      { extends: true, test: { name: 'processes', include: PROCESS_SUITES } },
    ],
  },
});
