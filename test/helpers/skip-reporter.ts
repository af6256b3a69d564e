/**
 * Says, one line per suite, what `npm test` skipped and why (the reason needs() put in its meta),
 * after the summary. With CI=true any skipped test fails the run: CI must run everything.
 */
import type { Reporter, TestCase, TestModule, TestSuite, Vitest } from 'vitest/node';

/** The outermost suite (or the test itself) skipped for the same reason as `test`. */
function skippedUnit(test: TestCase, reason: string): TestCase | TestSuite {
  let unit: TestCase | TestSuite = test;
  for (let p = test.parent; p.type === 'suite'; p = p.parent) {
    if (p.meta().skipReason !== reason || p.state() !== 'skipped') break;
    unit = p;
  }
  return unit;
}

export default class SkipReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const log = (line: string) => (this.vitest ? this.vitest.logger.log(line) : console.log(line));
    const units = new Map<string, { reason: string; tests: number }>();
    let skipped = 0;
    for (const mod of modules)
      for (const test of mod.children.allTests('skipped')) {
        skipped += 1;
        const reason = test.meta().skipReason;
        // A test skipped by a filter (-t, .only) has no reason: only CI minds it.
        if (reason === undefined) continue;
        const unit = skippedUnit(test, reason);
        const key = `${mod.relativeModuleId} > ${unit.fullName}`;
        const entry = units.get(key) ?? { reason, tests: 0 };
        entry.tests += 1;
        units.set(key, entry);
      }
    if (units.size > 0) log('');
    for (const [key, { reason, tests }] of [...units].sort(([a], [b]) => a.localeCompare(b)))
      log(`SKIPPED ${key} (${tests} test${tests === 1 ? '' : 's'}) — ${reason}`);
    if (process.env.CI === 'true' && skipped > 0) {
      log(`CI=true: ${skipped} test${skipped === 1 ? '' : 's'} skipped; CI must run every test`);
      process.exitCode = 1;
    }
  }
}
