/**
 * What scripts/bundle.mjs changes in what it bundles: node-redis's command classes are built
 * on dictionary-mode prototypes (nodeRedisPrototypes), so creating the first client leaves
 * almost no garbage, and a node-redis whose code no longer matches fails the build.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeRedisPrototypes } from '../scripts/bundle.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bundle-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Heap used before and after the first createClient, and after a full GC: what it left as garbage.
const PROBE = `
import { createClient } from '@redis/client';
const used = () => process.memoryUsage().heapUsed;
globalThis.gc(); const before = used();
const client = createClient({ url: 'redis://127.0.0.1:1' });
const after = used(); globalThis.gc(); const kept = used();
if (typeof client.get !== 'function' || typeof client.multi().get !== 'function') throw new Error('no commands');
console.log(JSON.stringify({ garbage: after - kept, kept: kept - before }));
`;

async function probe(withPlugin: boolean): Promise<{ garbage: number; kept: number }> {
  const entry = join(dir, 'probe.mjs');
  writeFileSync(entry, PROBE);
  const outfile = join(dir, withPlugin ? 'with.mjs' : 'without.mjs');
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    nodePaths: [join(root, 'node_modules')],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    plugins: withPlugin ? [nodeRedisPrototypes] : [],
    logLevel: 'silent',
  });
  const r = spawnSync(process.execPath, ['--expose-gc', outfile], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as { garbage: number; kept: number };
}

describe('the bundle (scripts/bundle.mjs)', () => {
  it("builds node-redis's client classes without megabytes of start-up garbage", async () => {
    const without = await probe(false);
    const withIt = await probe(true);
    // Without the plugin V8 copies the prototype's descriptors at each of ~1,000 methods (~13 MiB).
    expect(without.garbage).toBeGreaterThan(8 * 1024 * 1024);
    expect(withIt.garbage).toBeLessThan(2 * 1024 * 1024);
    // What stays (the classes themselves) is about the same either way.
    expect(Math.abs(withIt.kept - without.kept)).toBeLessThan(1024 * 1024);
  });

  it('fails the build when node-redis no longer declares its command class as expected', async () => {
    const lib = join(dir, 'node_modules', '@redis', 'client', 'dist', 'lib');
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(lib, 'commander.js'), 'exports.attachConfig = () => class {};\n');
    writeFileSync(join(dir, 'changed.mjs'), "import './node_modules/@redis/client/dist/lib/commander.js';\n");
    await expect(
      build({
        entryPoints: [join(dir, 'changed.mjs')],
        write: false,
        bundle: true,
        platform: 'node',
        plugins: [nodeRedisPrototypes],
        logLevel: 'silent',
      }),
    ).rejects.toThrow(/no longer declares its command class/);
  });
});
