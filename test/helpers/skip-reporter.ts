/**
 * Says, one line per suite, what `npm test` skipped and why (the reason needs() put in its meta),
 * after the summary. With CI=true any skipped test fails the run: CI must run everything.
 */
import type { TaskMeta } from 'vitest';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

// The parts of vitest's reported tasks read here (TestModule, TestSuite, TestCase fit them).
interface ModuleLike {
  type: 'module';
  relativeModuleId: string;
  children: { allTests(state: 'skipped'): Iterable<TestLike> };
}
interface SuiteLike {
  type: 'suite';
  fullName: string;
  parent: SuiteLike | ModuleLike;
  meta(): TaskMeta;
  state(): string;
}
interface TestLike {
  fullName: string;
  parent: SuiteLike | ModuleLike;
  meta(): TaskMeta;
}

/** The outermost suite (or the test itself) skipped for the same reason as `test`. */
function skippedUnit(test: TestLike, reason: string): TestLike | SuiteLike {
  let unit: TestLike | SuiteLike = test;
  for (let p = test.parent; p.type === 'suite'; p = p.parent) {
    if (p.meta().skipReason !== reason || p.state() !== 'skipped') break;
    unit = p;
  }
  return unit;
}

/** One line per skipped suite that says why, and how many tests were skipped in all. */
export function skipSummary(modules: Iterable<ModuleLike>): { lines: string[]; skipped: number } {
  const units = new Map<string, { reason: string; tests: number }>();
  let skipped = 0;
  for (const mod of modules)
    for (const test of mod.children.allTests('skipped')) {
      skipped += 1;
      const reason = test.meta().skipReason;
      // A test skipped by a filter (-t, .only) has no reason: only CI minds it.
      if (reason === undefined) continue;
      const key = `${mod.relativeModuleId} > ${skippedUnit(test, reason).fullName}`;
      const entry = units.get(key) ?? { reason, tests: 0 };
      entry.tests += 1;
      units.set(key, entry);
    }
  const lines = [...units]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, { reason, tests }]) => `SKIPPED ${key} (${tests} test${tests === 1 ? '' : 's'}) — ${reason}`);
  return { lines, skipped };
}

export default class SkipReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const log = (line: string) => (this.vitest ? this.vitest.logger.log(line) : console.log(line));
    const { lines, skipped } = skipSummary(modules);
    if (lines.length > 0) log('');
    for (const line of lines) log(line);
    if (process.env.CI === 'true' && skipped > 0) {
      log(`CI=true: ${skipped} test${skipped === 1 ? '' : 's'} skipped; CI must run every test`);
      process.exitCode = 1;
    }
  }
}
