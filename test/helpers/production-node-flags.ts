import { readFileSync } from 'node:fs';

/**
 * The V8 flags the bot runs with in production: those of `npm start` (package.json),
 * which the Dockerfile's CMD repeats (test/runtime-flags.test.ts keeps them equal).
 * Every bench and the playground start the bot with them, so they run it as production does.
 */
export function productionNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  const flags: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const w = words[i] ?? '';
    if (w === '--import')
      i++; // the TypeScript loader, not a runtime flag
    else if (w.startsWith('--')) flags.push(w);
  }
  return flags;
}
