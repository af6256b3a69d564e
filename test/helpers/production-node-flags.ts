import { readFileSync } from 'node:fs';
import { BOT_BUNDLE, bundleBot } from '../../scripts/bundle.mjs';

/** scripts/start.sh: the one place of the bot's runtime settings (npm start and the Docker image run it). */
function launcher(): string {
  return readFileSync(new URL('../../scripts/start.sh', import.meta.url), 'utf8');
}

/** The environment the launcher exports before `node` (glibc malloc settings). */
export function productionEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of launcher().matchAll(/^export ([A-Z_][A-Z0-9_]*)=(\S+)$/gm)) env[m[1] ?? ''] = m[2] ?? '';
  return env;
}

/**
 * The Node flags the bot runs with in production (the launcher's `exec node …` line).
 * Every bench and the playground start the bot with them, so they run it as production does.
 */
export function productionNodeFlags(): string[] {
  const line = /^exec node (.*) "\$@"$/m.exec(launcher())?.[1] ?? '';
  return line.split(/\s+/).filter((w) => w.startsWith('--'));
}

/**
 * What `npm start` runs: the production flags, then the bundled bot (dist/bot/main.js, see
 * scripts/bundle.mjs), built first when a source changed. Tests, benchmarks and the playground
 * start the bot this way, so they run the artifact production runs. `extraFlags` (the benchmarks'
 * profiling) go after the production flags.
 */
export async function botCommand(extraFlags: readonly string[] = []): Promise<string[]> {
  await bundleBot({ ifStale: true });
  return [...productionNodeFlags(), ...extraFlags, BOT_BUNDLE];
}
