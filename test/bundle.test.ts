/**
 * What scripts/bundle.mjs changes in what it bundles: node-redis's command classes are built
 * on dictionary-mode prototypes (nodeRedisPrototypes), so creating the first client leaves
 * almost no garbage, and a node-redis whose code no longer matches fails the build; BullMQ
 * without the backends the bot never opens, Zod's namespaces with English only and the
 * message catalogs read at start: less source text kept alive, the same behaviour.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  bullmqModules,
  catalogsReadAtStart,
  nodeRedisPrototypes,
  zodEnglishOnly,
} from '../scripts/bundle.mjs';
import { CATALOGS } from '../src/i18n/catalogs.js';

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
    await expectBuildToFail(
      '@redis/client/dist/lib/commander.js',
      'exports.attachConfig = () => class {};\n',
      nodeRedisPrototypes,
      /no longer declares its command class/,
    );
  });

  it("leaves out BullMQ's PostgreSQL and GLIDE backends; its Queue and Worker are there", async () => {
    const source = "import { Queue, Worker } from 'bullmq'; console.log(typeof Queue, typeof Worker);";
    const without = await bundled('bullmq-cjs', source, []);
    const withIt = await bundled('bullmq-esm', source, [bullmqModules]);
    expect(without.inputs.some((i) => i.includes('bullmq/dist/cjs/postgres/sql-scripts'))).toBe(true);
    expect(withIt.inputs.some((i) => i.includes('bullmq/dist/esm/classes/worker'))).toBe(true);
    expect(withIt.inputs.filter((i) => /bullmq.*(postgres|valkey-glide)/.test(i))).toEqual([]);
    expect(withIt.bytes).toBeLessThan(without.bytes - 250_000);
    expect(withIt.run()).toBe('function function');
  });

  it("keeps Zod's English only: the same messages, z.locales holds en", async () => {
    const source =
      "import { z } from 'zod'; const r = z.object({ n: z.number().min(2) }).safeParse({ n: 1 }); console.log(JSON.stringify({ locales: Object.keys(z.locales), core: Object.keys(z.core.locales), issues: r.error.issues }));";
    const withIt = await bundled('zod', source, [zodEnglishOnly]);
    const out = JSON.parse(withIt.run()) as { locales: string[]; core: string[]; issues: unknown };
    expect(out.locales).toEqual(['en']);
    expect(out.core).toEqual(['en']);
    expect(out.issues).toEqual(
      JSON.parse(JSON.stringify(z.object({ n: z.number().min(2) }).safeParse({ n: 1 }).error?.issues)),
    );
    expect(withIt.inputs.filter((i) => /zod[\\/]v4[\\/]locales[\\/](?!en\.js|index\.js)/.test(i))).toEqual(
      [],
    );
  });

  it('fails the build when Zod is bundled and its locales index is not where the build expects it', async () => {
    await expectBuildToFail(
      'zod/v4/core/index.js',
      'export const locales = {};\n',
      zodEnglishOnly,
      /review zodEnglishOnly/,
    );
  });

  it('reads the message catalogs at start instead of carrying them in its source', async () => {
    const source = `import { CATALOGS } from ${JSON.stringify(join(root, 'src', 'i18n', 'catalogs.ts'))}; console.log(JSON.stringify(CATALOGS));`;
    const withIt = await bundled('catalogs', source, [catalogsReadAtStart], (out) =>
      cpSync(join(root, 'src', 'i18n', 'locales'), join(out, 'i18n'), { recursive: true }),
    );
    expect(JSON.parse(withIt.run())).toEqual(CATALOGS);
    expect(withIt.text).not.toContain(CATALOGS.ja['commands.upscale.description']);
    expect(withIt.text).not.toContain(CATALOGS.de['commands.upscale.description']);
  });
});

/** A package file written as `contents` under a scratch node_modules: bundling it with `plugin` fails with `message`. */
async function expectBuildToFail(
  file: string,
  contents: string,
  plugin: Plugin,
  message: RegExp,
): Promise<void> {
  const path = join(dir, 'node_modules', file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, contents);
  const entry = join(dir, `changed-${plugin.name}.mjs`);
  writeFileSync(entry, `import './node_modules/${file}';\n`);
  await expect(
    build({
      entryPoints: [entry],
      write: false,
      bundle: true,
      platform: 'node',
      plugins: [plugin],
      logLevel: 'silent',
    }),
  ).rejects.toThrow(message);
}

/** Bundles `source` as the bot's bundle does (with `plugins`), into a folder of its own. */
async function bundled(
  name: string,
  source: string,
  plugins: Plugin[],
  beside?: (outdir: string) => void,
): Promise<{ inputs: string[]; bytes: number; text: string; run: () => string }> {
  const outdir = join(dir, name);
  mkdirSync(outdir, { recursive: true });
  const entry = join(outdir, 'entry.mjs');
  writeFileSync(entry, source);
  const result = await build({
    entryPoints: [entry],
    outfile: join(outdir, 'out.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    nodePaths: [join(root, 'node_modules')],
    banner: {
      js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
    },
    metafile: true,
    plugins,
    logLevel: 'silent',
  });
  beside?.(outdir);
  const meta: Metafile = result.metafile;
  const text = readFileSync(join(outdir, 'out.mjs'), 'utf8');
  return {
    // What reached the output (the metafile's inputs list what was read, tree-shaken or not).
    inputs: Object.values(meta.outputs).flatMap((o) =>
      Object.entries(o.inputs)
        .filter(([, i]) => i.bytesInOutput > 0)
        .map(([path]) => path),
    ),
    bytes: Buffer.byteLength(text),
    text,
    run() {
      const r = spawnSync(process.execPath, [join(outdir, 'out.mjs')], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      return r.stdout.trim();
    },
  };
}
