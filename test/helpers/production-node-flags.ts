import { readFileSync } from 'node:fs';

/** The words of `npm start` (package.json). */
function startWords(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string };
  };
  return pkg.scripts.start.split(/\s+/);
}

/**
 * The environment `npm start` sets before `node` (glibc malloc settings, README "Memory and
 * V8 flags"), which the Dockerfile's ENV repeats.
 */
export function productionEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const w of startWords()) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(w);
    if (!m) break;
    env[m[1] ?? ''] = m[2] ?? '';
  }
  return env;
}

/**
 * The V8 flags the bot runs with in production: those of `npm start` (package.json),
 * which the Dockerfile's CMD repeats (test/runtime-flags.test.ts keeps them equal).
 * Every bench and the playground start the bot with them, so they run it as production does.
 */
export function productionNodeFlags(): string[] {
  const words = startWords();
  const flags: string[] = [];
  for (let i = words.indexOf('node') + 1; i < words.length; i++) {
    const w = words[i] ?? '';
    if (w === '--import')
      i++; // the TypeScript loader, not a runtime flag
    else if (w.startsWith('--')) flags.push(w);
  }
  return flags;
}
