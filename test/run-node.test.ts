/**
 * The process tests' runner (test/helpers/run-node.ts) gives back all a process printed, also
 * when it exits at once after printing: the start-failure tests read the one line a bot prints
 * before `process.exit(1)`, and under a loaded CI that line was once missing.
 */
import { describe, expect, it } from 'vitest';
import { runNode } from './helpers/run-node.js';

describe('runNode', () => {
  it('gives back everything written before an immediate exit', async () => {
    // Under the pipe's buffer, so the child's writes complete before it exits; what may be
    // lost is the parent's reading, when it answers at the exit instead of the pipes' end.
    const size = 60 * 1024;
    const script = `process.stdout.write('o'.repeat(${size})); process.stderr.write('e'.repeat(${size})); process.exit(3)`;
    const runs = await Promise.all(
      Array.from({ length: 20 }, () => runNode(['-e', script], { cwd: process.cwd(), env: {} })),
    );
    for (const r of runs) {
      expect(r.code).toBe(3);
      expect(r.stdout.length).toBe(size);
      expect(r.stderr.length).toBe(size);
    }
  });
});
