/**
 * `npm run bench`'s command line (bench/run.ts): `--help` prints the benchmarks and exits 0
 * without running any; an unknown name exits 2 with the same list. The benchmarks themselves
 * are not run here (minutes each, most of the machine).
 */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', ...args],
      { timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });

const NAMES = ['throughput', 'storm', 'memory', 'photo', 'recovery'];

describe('npm run bench', () => {
  it.concurrent.each([['--help'], ['-h']])(
    '%s prints the benchmarks and exits 0, running none',
    async (flag) => {
      const r = await run([flag]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^npm run bench \[-- name…\]/);
      for (const name of NAMES) expect(r.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      expect(r.stdout).not.toContain('==');
    },
    70_000,
  );

  it.concurrent(
    'an unknown name exits 2, naming it, with the list',
    async () => {
      const r = await run(['nope']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('unknown benchmark(s): nope');
      for (const name of NAMES) expect(r.stderr).toContain(`  ${name}`);
    },
    70_000,
  );
});
