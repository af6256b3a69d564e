/** How suites skip for want of Redis, redis-server, Chromium or nginx, and how the run says so. */
import { describe, expect, it } from 'vitest';
import type { TaskMeta } from 'vitest';
import type { Capabilities } from './helpers/detect.js';
import { skipOptions } from './helpers/requirements.js';
import { skipSummary } from './helpers/skip-reporter.js';

const caps: Capabilities = {
  redis: { ok: false, reason: 'no Redis answers at redis://127.0.0.1:6390' },
  redisServer: { ok: true, at: 'redis-server' },
  chromium: { ok: false, reason: 'no Chromium' },
  nginx: { ok: true, at: '/usr/sbin/nginx' },
};

describe('needs()', () => {
  it('runs when everything named is there', () => {
    expect(skipOptions(caps, ['redisServer', 'nginx'])).toEqual({});
  });

  it('skips with every missing reason when something is not', () => {
    expect(skipOptions(caps, ['redis', 'nginx', 'chromium'])).toEqual({
      skip: true,
      meta: { skipReason: 'no Redis answers at redis://127.0.0.1:6390; no Chromium' },
    });
  });
});

// Reported tasks as vitest gives them to a reporter, reduced to what the summary reads.
type Parent = Suite | Module;
interface Module {
  type: 'module';
  relativeModuleId: string;
  tests: Test[];
  children: { allTests(state: 'skipped'): Iterable<Test> };
}
interface Suite {
  type: 'suite';
  fullName: string;
  parent: Parent;
  skipped: boolean;
  meta(): TaskMeta;
  state(): string;
}
interface Test {
  fullName: string;
  parent: Parent;
  skipped: boolean;
  meta(): TaskMeta;
}

function module(id: string): Module {
  const m: Module = {
    type: 'module',
    relativeModuleId: id,
    tests: [],
    children: { allTests: () => m.tests.filter((t) => t.skipped) },
  };
  return m;
}
function suite(parent: Parent, name: string, skipReason?: string): Suite {
  const prefix = parent.type === 'suite' ? `${parent.fullName} > ` : '';
  return {
    type: 'suite',
    fullName: prefix + name,
    parent,
    skipped: skipReason !== undefined,
    meta: () => (skipReason === undefined ? {} : { skipReason }),
    state: () => (skipReason === undefined ? 'passed' : 'skipped'),
  };
}
function test(mod: Module, parent: Parent, name: string, skipped: boolean, skipReason?: string): void {
  const meta = skipReason ?? (parent.type === 'suite' ? parent.meta().skipReason : undefined);
  mod.tests.push({
    fullName: parent.type === 'suite' ? `${parent.fullName} > ${name}` : name,
    parent,
    skipped,
    meta: () => (meta === undefined ? {} : { skipReason: meta }),
  });
}

describe('the skip summary', () => {
  it('one line per skipped suite with its reason and test count; nested suites count in theirs', () => {
    const store = module('test/store.test.ts');
    const redis = suite(store, 'JobStore on redis', 'no Redis');
    test(store, redis, 'a', true);
    test(store, suite(redis, 'nested', 'no Redis'), 'b', true);
    test(store, suite(store, 'JobStore on sqlite'), 'c', false);
    const browser = module('test/browser.test.ts');
    test(browser, browser, 'clicks', true, 'no Chromium');
    test(browser, browser, 'types', true, 'no Chromium');

    expect(skipSummary([store, browser])).toEqual({
      lines: [
        'SKIPPED test/browser.test.ts > clicks (1 test) — no Chromium',
        'SKIPPED test/browser.test.ts > types (1 test) — no Chromium',
        'SKIPPED test/store.test.ts > JobStore on redis (2 tests) — no Redis',
      ],
      skipped: 4,
    });
  });

  it('a test skipped without a reason (a -t filter) is counted, not explained', () => {
    const mod = module('test/x.test.ts');
    const s = suite(mod, 'runs');
    test(mod, s, 'filtered out', true);
    test(mod, s, 'ran', false);
    expect(skipSummary([mod])).toEqual({ lines: [], skipped: 1 });
  });
});
