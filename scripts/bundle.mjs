// Bundles the bot (src/main.ts and what it imports) with esbuild into dist/bot/: what `npm start`,
// the Docker image, the process tests, the benchmarks and the playground run. One bundle instead of
// ~2,000 module files: V8 keeps every loaded module's source text to compile its functions lazily,
// and a bundle without comments or indentation, with what is never imported left out, holds about
// half as much (docs/performance.md, "Where the memory goes"); no TypeScript loader runs beside the
// bot (tsx's hooks thread and its compile cache cost ~30 MiB of RSS), and the start is quicker.
//
//   node scripts/bundle.mjs              build
//   node scripts/bundle.mjs --if-stale   build only when a source changed since (npm start)
//
// Native addons and what is loaded by path stay external (node_modules at run time): sqlite3,
// sharp, pino-pretty. Dynamic imports stay lazy chunks (SQLite driver, BullMQ, sharp). Names are
// kept (no mangling), so stack traces read as the source; dist/bot/*.map maps them back to it
// with NODE_OPTIONS=--enable-source-maps.
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist', 'bot');
const entry = join(root, 'src', 'main.ts');
/** Only one build at a time (the test lanes and npm start may ask at once). */
const lockDir = join(root, 'dist', '.bot-lock');
const LOCK_STALE_MS = 120_000;

/** Packages resolved at run time from node_modules: native code, or loaded by file path. */
const EXTERNAL = [
  'sqlite3',
  'sharp',
  'pino-pretty',
  'msgpackr-extract',
  // Optional accelerators of ws / @discordjs/ws, absent unless installed.
  'bufferutil',
  'utf-8-validate',
  'zlib-sync',
];

/**
 * node-redis builds its client and MULTI classes (once each, at the first `createClient`) by
 * adding ~1,000 command methods one at a time to a fresh class prototype. V8 keeps a class
 * prototype in fast mode and copies its whole descriptor array at each addition: quadratic,
 * 13.7 MiB of garbage for the two classes (heap used 6.0 → 19.7 MiB, 6.3 after a full GC),
 * which the bot then carries in its old generation until its first full GC, through the
 * first storm. Putting the prototype in dictionary mode first (deleting a property does)
 * makes each addition constant; V8 makes the prototype fast again at its first use. The
 * methods, their order and `constructor`'s attributes are unchanged. A changed commander.js
 * fails the build rather than bundle without it (test/bundle.test.ts measures the effect).
 */
const NODE_REDIS_COMMANDER = /@redis[\\/]client[\\/]dist[\\/]lib[\\/]commander\.js$/;
const COMMANDER_CLASS = 'Class = class extends BaseClass {\n    };';
export const nodeRedisPrototypes = {
  name: 'node-redis-dictionary-prototypes',
  setup(build) {
    build.onLoad({ filter: NODE_REDIS_COMMANDER }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (source.split(COMMANDER_CLASS).length !== 2)
        throw new Error(
          `${args.path} no longer declares its command class as this build expects: review nodeRedisPrototypes in scripts/bundle.mjs`,
        );
      const dictionary =
        "{ const d = Object.getOwnPropertyDescriptor(Class.prototype, 'constructor'); delete Class.prototype.constructor; Object.defineProperty(Class.prototype, 'constructor', d); }";
      return { contents: source.replace(COMMANDER_CLASS, `${COMMANDER_CLASS} ${dictionary}`), loader: 'js' };
    });
  },
};

/**
 * For a plugin that changes a package: fails the build when a module matching `bundled` was
 * bundled but the plugin never called the returned `seen` (what it changes has moved), instead
 * of bundling the package unchanged without a word.
 */
function failUnlessSeen(build, bundled, message) {
  let seen = false;
  let present = false;
  build.onStart(() => {
    seen = false;
    present = false;
  });
  build.onLoad({ filter: bundled }, () => {
    present = true;
    return undefined;
  });
  build.onEnd(() => {
    if (present && !seen) throw new Error(message);
  });
  return () => {
    seen = true;
  };
}

/**
 * BullMQ declares no `exports`, so a Node bundle takes its CommonJS build, whose index
 * requires every backend at start: PostgreSQL (its SQL, 0.25 MiB of strings kept alive),
 * the Valkey GLIDE and Bun clients, none of which the bot opens (what of the Bun client
 * BullMQ's connection refers to stays). Its ES module build (`module`) with
 * those backends' modules marked free of side effects (they only declare; BullMQ marks
 * none) lets the bundle leave out what the bot does not use. What V8 keeps alive at start
 * it lets grow four times over until its second full GC (docs/performance.md, "What still
 * holds memory"). A BullMQ that stops naming its ES module build fails the build.
 */
const BULLMQ_UNUSED_BACKENDS = /[\\/]postgres([\\/]|$)|bun-redis-client|valkey-glide-client/;
export const bullmqModules = {
  name: 'bullmq-es-modules',
  setup(build) {
    build.onResolve({ filter: /^bullmq$/ }, () => {
      const pkg = JSON.parse(readFileSync(join(root, 'node_modules', 'bullmq', 'package.json'), 'utf8'));
      if (typeof pkg.module !== 'string')
        throw new Error(
          'bullmq no longer names its ES module build (`module`): review bullmqModules in scripts/bundle.mjs',
        );
      return { path: join(root, 'node_modules', 'bullmq', pkg.module) };
    });
    build.onResolve({ filter: /^\./ }, async (args) => {
      if (args.pluginData?.bullmq || !/[\\/]bullmq[\\/]dist[\\/]esm[\\/]/.test(args.importer))
        return undefined;
      const r = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { bullmq: true },
      });
      if (r.errors.length > 0) return { errors: r.errors };
      if (!BULLMQ_UNUSED_BACKENDS.test(r.path)) return r;
      markedOne();
      return { ...r, sideEffects: false };
    });
    // BullMQ bundled without any backend left out: its modules moved, the build says so.
    const markedOne = failUnlessSeen(
      build,
      /[\\/]bullmq[\\/]dist[\\/]esm[\\/]index\.js$/,
      "none of BullMQ's unused backends was found: review bullmqModules in scripts/bundle.mjs",
    );
  },
};

/**
 * Zod's namespace object (`z`, what the bot imports) carries `z.locales` and `z.core.locales`:
 * error messages in 50 languages, 0.3 MiB of source kept alive from start, of which Zod itself
 * uses only English (its default, imported on its own) and the bot none (members read its own
 * catalogs, src/i18n). In the bundle both namespaces hold English only. A Zod whose locales
 * index moves or changes fails the build.
 */
const ZOD_LOCALES_INDEX = /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/;
const ZOD_ENGLISH = 'export { default as en } from "./en.js";';
export const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    // The index itself is rewritten (a file, so the bundle's staleness check still sees it).
    build.onLoad({ filter: ZOD_LOCALES_INDEX }, (args) => {
      if (!readFileSync(args.path, 'utf8').includes(ZOD_ENGLISH))
        throw new Error(
          `${args.path} no longer exports English as this build expects: review zodEnglishOnly in scripts/bundle.mjs`,
        );
      rewritten();
      return { contents: ZOD_ENGLISH, loader: 'js' };
    });
    // Zod bundled and its locale index never seen: the index moved, the build says so.
    const rewritten = failUnlessSeen(
      build,
      /[\\/]zod[\\/]v4[\\/](core|classic)[\\/]/,
      'Zod was bundled without its locales index: review zodEnglishOnly in scripts/bundle.mjs',
    );
  },
};

/**
 * The six message catalogs (src/i18n/locales/*.json) are read at start from dist/bot/i18n/
 * instead of written into the bundle as object literals: the objects are the same, but V8
 * keeps every loaded script's source text, and 0.3 MiB of catalogs in it stays alive for the
 * process's life (four times that in heap growth before V8's second full GC; see bullmqModules).
 */
const CATALOG_JSON = /[\\/]src[\\/]i18n[\\/]locales[\\/]([^\\/]+\.json)$/;
export const catalogsReadAtStart = {
  name: 'catalogs-read-at-start',
  setup(build) {
    build.onLoad({ filter: CATALOG_JSON }, (args) => {
      const file = CATALOG_JSON.exec(args.path)?.[1] ?? '';
      return {
        contents: `import { readFileSync } from 'node:fs'; export default JSON.parse(readFileSync(new URL(${JSON.stringify(`./i18n/${file}`)}, import.meta.url), 'utf8'));`,
        loader: 'js',
      };
    });
  },
};

/** The bundle's entry file (what `node` runs). */
export const BOT_BUNDLE = join(outdir, 'main.js');

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)],
  );
}

/**
 * The Lua scripts the store reads beside its module (`./lua/<name>.lua`): copied beside every
 * chunk here, and beside tsc's modules by copy-assets.mjs.
 */
export function luaFiles() {
  return walk(join(root, 'src')).filter((f) => f.endsWith('.lua'));
}

/** Whether dist/bot is older than anything it was built from (or missing). */
function bundleIsStale() {
  const meta = join(outdir, 'meta.json');
  if (!existsSync(BOT_BUNDLE) || !existsSync(meta)) return true;
  const builtAt = statSync(meta).mtimeMs;
  let inputs;
  try {
    inputs = Object.keys(JSON.parse(readFileSync(meta, 'utf8')).inputs);
  } catch {
    return true;
  }
  const sources = [
    ...inputs.map((p) => join(root, p)),
    ...luaFiles(),
    fileURLToPath(import.meta.url),
    join(root, 'package-lock.json'),
  ];
  for (const file of sources) {
    try {
      if (statSync(file).mtimeMs > builtAt) return true;
    } catch {
      return true; // an input is gone
    }
  }
  return false;
}

async function build() {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    throw new Error(
      'esbuild is not installed: run `npm ci` (it is a dev dependency), or `npm run build` where it is',
    );
  }
  const started = Date.now();
  const tmp = join(root, 'dist', `.bot-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: { main: entry },
    outdir: tmp,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    external: EXTERNAL,
    // CommonJS packages inside an ES module bundle call `require` (node: built-ins among them).
    banner: {
      js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
    },
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'external',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    plugins: [nodeRedisPrototypes, bullmqModules, zodEnglishOnly, catalogsReadAtStart],
  });
  const names = new Set();
  mkdirSync(join(tmp, 'lua'), { recursive: true });
  for (const file of luaFiles()) {
    const name = basename(file);
    if (names.has(name))
      throw new Error(`two Lua scripts named ${name}: the bundle keeps them in one folder`);
    names.add(name);
    cpSync(file, join(tmp, 'lua', name));
  }
  mkdirSync(join(tmp, 'i18n'));
  for (const file of readdirSync(join(root, 'src', 'i18n', 'locales')).filter((f) => f.endsWith('.json')))
    cpSync(join(root, 'src', 'i18n', 'locales', file), join(tmp, 'i18n', file));
  // Written last: its time is the build's (bundleIsStale compares against it).
  writeFileSync(join(tmp, 'meta.json'), JSON.stringify(result.metafile));
  rmSync(outdir, { recursive: true, force: true });
  renameSync(tmp, outdir);
  const bytes = Object.entries(result.metafile.outputs)
    .filter(([f]) => f.endsWith('.js'))
    .reduce((n, [, o]) => n + o.bytes, 0);
  process.stdout.write(
    `bundled the bot into ${relative(root, outdir)}/ (${(bytes / 1048576).toFixed(1)} MiB of JavaScript, ${Date.now() - started} ms)\n`,
  );
}

function takeLock() {
  mkdirSync(join(root, 'dist'), { recursive: true });
  try {
    mkdirSync(lockDir);
    return true;
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
    // A build that died holding it: taken over after LOCK_STALE_MS.
    try {
      if (Date.now() - statSync(lockDir).mtimeMs > LOCK_STALE_MS)
        rmSync(lockDir, { recursive: true, force: true });
    } catch {
      /* gone meanwhile */
    }
    return false;
  }
}

/** Builds dist/bot (only when stale with `ifStale`), one build at a time across processes. */
export async function bundleBot({ ifStale = false } = {}) {
  if (ifStale && !bundleIsStale()) return;
  const deadline = Date.now() + LOCK_STALE_MS + 30_000;
  while (!takeLock()) {
    if (Date.now() > deadline) throw new Error(`another build holds ${relative(root, lockDir)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    // Another process may have built it while this one waited.
    if (ifStale && !bundleIsStale()) return;
    await build();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const ifStale = process.argv.includes('--if-stale');
  try {
    await bundleBot({ ifStale });
  } catch (err) {
    // esbuild missing in a production install with a bundle already there: run that one.
    if (ifStale && existsSync(BOT_BUNDLE) && /esbuild is not installed/.test(String(err?.message)))
      process.exit(0);
    process.stderr.write(`bundle: ${err?.message ?? err}\n`);
    process.exit(1);
  }
}
