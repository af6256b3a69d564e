/**
 * The bot's V8 flags (README "Memory and V8 flags") are part of how it runs in production: `npm start`
 * and the Docker image must use the same ones, and the benchmarks start the bot with them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { productionEnv, productionNodeFlags } from './helpers/production-node-flags.js';

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

describe('runtime V8 flags', () => {
  const flags = productionNodeFlags();

  it('npm start bounds the young generation', () => {
    expect(flags).toContain('--max-semi-space-size=4');
  });

  it('npm start turns off allocation-site pretenuring (it made every webhook promote ~2.6 KB)', () => {
    expect(flags).toContain('--no-allocation-site-pretenuring');
  });

  it('npm start bounds how far the old generation grows past a full GC (V8 picks up to 4x from machine speed)', () => {
    expect(flags).toContain('--heap-growing-percent=20');
  });

  it('npm start exposes gc: the heap trim runs a memory-reducing GC with it (V8 12+ keeps freed pages pooled)', () => {
    expect(flags).toContain('--expose-gc');
  });

  it('npm start sets glibc malloc to two arenas and a fixed trim threshold', () => {
    expect(productionEnv()).toEqual({ MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' });
  });

  it('the Dockerfile sets the same malloc environment as npm start', () => {
    const env: Record<string, string> = {};
    for (const line of read('Dockerfile')
      .split('\n')
      .filter((l) => l.startsWith('ENV '))) {
      for (const m of line.slice(4).matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) env[m[1] ?? ''] = m[2] ?? '';
    }
    expect(env).toMatchObject(productionEnv());
  });

  it('Node accepts every flag (an unknown V8 flag would stop the bot at start)', () => {
    const r = spawnSync(process.execPath, [...flags, '-e', '0'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('the Dockerfile CMD runs the compiled bot with the same flags as npm start', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(cmd).toBeDefined();
    expect(JSON.parse(cmd ?? '[]')).toEqual(['node', ...flags, 'dist/src/main.js']);
  });
});
