/**
 * The bot's runtime settings live in one place, scripts/start.sh: `npm start` and the Docker
 * image both run the bot through it, so they can never drift apart, and Node must accept them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { productionEnv, productionNodeFlags } from './helpers/production-node-flags.js';

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

describe('runtime settings (scripts/start.sh)', () => {
  // What keeps the settings in one place: both go through the launcher (whatever follows it).
  it('npm start and the Docker image both start the bot through the launcher', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toBe('sh scripts/start.sh');
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    // The image runs the same bundle `npm start` builds (`npm run build` makes it in the build stage).
    expect(JSON.parse(cmd ?? '[]') as string[]).toEqual(['sh', 'scripts/start.sh', 'dist/bot/main.js']);
    // The Dockerfile adds no Node flags or malloc settings of its own.
    expect(read('Dockerfile')).not.toMatch(/MALLOC_|--max-semi-space-size|NODE_OPTIONS/);
  });

  it('the launcher runs Node with its settings, and Node accepts them', () => {
    const r = spawnSync(
      'sh',
      [
        'scripts/start.sh',
        '-e',
        'console.log(process.env.MALLOC_ARENA_MAX, process.execArgv.filter((a) => a.startsWith("--max")).join(" "))',
      ],
      {
        cwd: new URL('..', import.meta.url),
        encoding: 'utf8',
      },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(`${productionEnv()['MALLOC_ARENA_MAX']} ${productionNodeFlags().join(' ')}`);
  });

  it('without arguments (npm start) the launcher runs the bundled bot, not a TypeScript loader', () => {
    // An empty environment: the bot itself answers, with its one line per missing variable.
    const r = spawnSync('sh', ['scripts/start.sh'], {
      cwd: new URL('..', import.meta.url),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('Cannot start: invalid configuration');
    expect(r.stderr).toMatch(/^\s+DISCORD_TOKEN: /m);
    // The bundle was fresh (the test setup builds it): nothing else is printed.
    expect(r.stdout).toBe('');
    expect(read('scripts/start.sh')).toMatch(/dist\/bot\/main\.js/);
    expect(read('scripts/start.sh')).not.toMatch(/tsx/);
  });

  it('no V8-internal GC flag and no exposed gc()', () => {
    const all = [...productionNodeFlags(), read('scripts/start.sh'), read('Dockerfile')].join(' ');
    expect(all).not.toMatch(/heap-growing-percent|allocation-site-pretenuring|expose-gc/);
  });
});
