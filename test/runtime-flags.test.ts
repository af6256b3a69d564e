/**
 * The bot's V8 flags (README "Memory") are part of how it runs in production: `npm start`
 * and the Docker image must use the same ones, and the benchmarks start the bot with them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { productionNodeFlags } from '../bench/common.js';

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

describe('runtime V8 flags', () => {
  const flags = productionNodeFlags();

  it('npm start bounds the young generation', () => {
    expect(flags).toContain('--max-semi-space-size=4');
  });

  it('the Dockerfile CMD runs the compiled bot with the same flags as npm start', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(cmd).toBeDefined();
    expect(JSON.parse(cmd ?? '[]')).toEqual(['node', ...flags, 'dist/src/main.js']);
  });
});
