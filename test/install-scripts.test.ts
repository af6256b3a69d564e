/**
 * npm's `allowScripts` (package.json): npm 11 skips the install script of a dependency
 * without an entry there and ends `npm ci` with a warning listing it. Every dependency of
 * the lockfile that has one is decided (true or false), so a clean install prints none; the
 * ones denied work without their script (see CONTRIBUTING.md, "Install scripts").
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const pkg = z
  .object({ allowScripts: z.record(z.string(), z.boolean()) })
  .parse(JSON.parse(readFileSync('package.json', 'utf8')));
const lock = z
  .object({
    packages: z.record(z.string(), z.object({ hasInstallScript: z.boolean().optional() })),
  })
  .parse(JSON.parse(readFileSync('package-lock.json', 'utf8')));

/** Names of the locked packages that have an install script. */
const withScripts = [
  ...new Set(
    Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  ),
].sort();

/** Whether msgpackr-extract's prebuilt binary for this platform is installed. */
const prebuiltAvailable = (() => {
  try {
    createRequire(`${process.cwd()}/node_modules/msgpackr-extract/`).resolve(
      `@msgpackr-extract/msgpackr-extract-${process.platform}-${process.arch}/package.json`,
    );
    return true;
  } catch {
    return false;
  }
})();

describe('install scripts', () => {
  it('every dependency with an install script is allowed or denied in allowScripts', () => {
    expect(withScripts.length).toBeGreaterThan(0);
    const covered = new Set(Object.keys(pkg.allowScripts).map((k) => k.replace(/(?<=.)@.*$/, '')));
    expect(withScripts.filter((name) => !covered.has(name))).toEqual([]);
  });

  it('msgpackr-extract is denied: its script only compiles a binary when no prebuilt one fits', () => {
    expect(pkg.allowScripts['msgpackr-extract']).toBe(false);
  });

  // On a platform with a prebuilt package (every CI machine) the accelerator loads without the
  // script; elsewhere msgpackr decodes in JavaScript, the same results, a little slower.
  it.runIf(prebuiltAvailable)('BullMQ’s msgpackr still loads its native accelerator', async () => {
    const msgpackr = await import('msgpackr');
    expect(msgpackr.isNativeAccelerationEnabled).toBe(true);
  });
});
